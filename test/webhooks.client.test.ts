// The typed client's webhooks.* and events.watch(), and `kiln listen --forward-to`, against a real
// server and worker: what the client and the CLI see is what a receiver verifies with
// `standardwebhooks`.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { createKilnClient } from '../src/client/index.ts';
import { startTestWorker } from './_generations.ts';
import { startCli } from './_cli.ts';
import { createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { startReceiver, verify } from './_webhooks.ts';

let srv: TestServer;

before(async () => {
  srv = await startServer({ config: { webhookAllowPrivate: true } });
  await startTestWorker(srv);
});

async function account() {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const { key } = await createKey(srv.db.sql, a.id);
  return { ...a, key };
}

test('client: webhooks.* manage an endpoint; events.watch() sees its test event', async () => {
  const a = await account();
  const client = createKilnClient({ baseUrl: srv.origin, apiKey: a.key });
  const rcv = await startReceiver();
  const e = await client.webhooks.create({ url: rcv.url, events: ['webhook.test', 'generation.completed'] });
  assert.match(e.secret, /^whsec_/);
  assert.deepEqual((await client.webhooks.list()).data.map((x) => x.id), [e.id]);
  assert.equal((await client.webhooks.update(e.id, { description: 'ci' })).description, 'ci');

  const ac = new AbortController();
  const watched = (async () => {
    for await (const ev of client.events.watch({ signal: ac.signal })) return ev;
  })();
  await new Promise((r) => setTimeout(r, 300)); // the stream starts from now
  assert.deepEqual(await client.webhooks.test(e.id), { accepted: true });
  const ev = await watched;
  ac.abort();
  assert.equal(ev!.event, 'webhook.test');
  assert.deepEqual(ev!.data.data, { endpointId: e.id });
  const [d] = await rcv.wait(1);
  assert.deepEqual(verify(e.secret, d!), ev!.data);

  const page = await client.webhooks.deliveries(e.id, { limit: 1 });
  assert.equal(page.data.length, 1);
  assert.equal(page.data[0]!.webhookId, d!.headers['webhook-id']);
  assert.equal(page.nextCursor, null);
  assert.deepEqual(await client.webhooks.redeliver(e.id, page.data[0]!.id), { accepted: true });
  await rcv.wait(2);
  const { secret } = await client.webhooks.rotateSecret(e.id);
  assert.notEqual(secret, e.secret);
  assert.equal((await client.webhooks.recover(e.id, new Date(0))).count, 0);
  await client.webhooks.delete(e.id);
  await assert.rejects(client.webhooks.get(e.id), (err: any) => err.status === 404 && err.type === 'not_found');
});

test('kiln listen --forward-to signs every event with the secret it prints and posts it to the local app', async () => {
  const a = await account();
  const app = await startReceiver('/local');
  const listen = startCli(['listen', '--forward-to', app.url, '--json'], { KILN_URL: srv.origin, KILN_API_KEY: a.key }, { timeoutMs: 60_000 });
  const started = await listen.line((l) => l.event === 'listening');
  assert.equal(started.forward_to, app.url);
  assert.match(started.secret, /^whsec_/);
  await new Promise((r) => setTimeout(r, 500));

  const client = createKilnClient({ baseUrl: srv.origin, apiKey: a.key });
  const gen = await client.generations.create({ type: 'code', model: 'local/coder', prompt: 'forward me' });
  const [d] = await app.wait(1, undefined, 20_000);
  const msg = verify(started.secret, d!);
  assert.equal(msg.type, 'generation.completed');
  assert.equal(msg.data.id, gen.id);
  assert.deepEqual(msg.data, await client.generations.get(gen.id));
  const fwd = await listen.line((l) => l.event === 'forwarded');
  assert.equal(fwd.status, 200);
  assert.equal(fwd.type, 'generation.completed');

  listen.child.kill('SIGINT');
  const res = await listen.done;
  assert.equal(res.code, 0, res.stderr);
});

test('kiln listen forwards each event with the webhook-id its real deliveries carry, at every endpoint', async () => {
  const a = await account();
  const client = createKilnClient({ baseUrl: srv.origin, apiKey: a.key });
  const [one, two, app] = [await startReceiver('/one'), await startReceiver('/two'), await startReceiver('/local')];
  const e1 = await client.webhooks.create({ url: one.url, events: ['generation.completed'] });
  const e2 = await client.webhooks.create({ url: two.url });
  const listen = startCli(['listen', '--forward-to', app.url, '--events', 'generation.completed', '--json'], { KILN_URL: srv.origin, KILN_API_KEY: a.key }, { timeoutMs: 60_000 });
  const started = await listen.line((l) => l.event === 'listening');
  await new Promise((r) => setTimeout(r, 500));

  const gen = await client.generations.create({ type: 'code', model: 'local/coder', prompt: 'same id everywhere' });
  const [forwarded] = await app.wait(1, undefined, 20_000);
  const [real1] = await one.wait(1, undefined, 20_000);
  const [real2] = await two.wait(1, (d) => d.json?.type === 'generation.completed', 20_000);
  // Each verifies as a receiver would, under its own secret: the id is part of what is signed.
  const msg = verify(started.secret, forwarded!);
  assert.equal(msg.data.id, gen.id);
  assert.deepEqual(verify(e1.secret, real1!), msg);
  assert.deepEqual(verify(e2.secret, real2!), msg);
  const id = forwarded!.headers['webhook-id'];
  assert.match(String(id), /^msg_\d+$/);
  assert.equal(real1!.headers['webhook-id'], id, 'the forward and the real delivery carry one webhook-id');
  assert.equal(real2!.headers['webhook-id'], id, 'and so does the delivery to another endpoint');
  assert.equal((await listen.line((l) => l.event === 'forwarded')).webhook_id, id);

  // A redelivery sends the same id again, and the log shows it beside the delivery's own id.
  const [logged] = (await client.webhooks.deliveries(e1.id)).data;
  assert.equal(logged!.webhookId, id);
  await client.webhooks.redeliver(e1.id, logged!.id);
  const [, again] = await one.wait(2, undefined, 20_000);
  assert.equal(again!.headers['webhook-id'], id);

  listen.child.kill('SIGINT');
  assert.equal((await listen.done).code, 0);
});

test('kiln listen: bad arguments are usage errors (exit 2)', async () => {
  for (const args of [['listen'], ['listen', '--forward-to', 'not-a-url'], ['listen', '--forward-to', 'ftp://x/y']]) {
    const res = await startCli(args, { KILN_URL: srv.origin, KILN_API_KEY: 'kiln_live_x' }).done;
    assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`);
  }
});
