// Delivery rules against loopback receivers and a real worker: Retry-After is honoured within the
// schedule's bounds, redirects are not followed, five days of failures disable an endpoint, and a
// receiver that hangs does not delay another account's deliveries.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { startTestWorker, until } from './_generations.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { startReceiver, verify, type Receiver } from './_webhooks.ts';

let srv: TestServer;

before(async () => {
  srv = await startServer({ config: { webhookAllowPrivate: true, webhookRetrySchedule: [1, 1, 4] } });
  await startTestWorker(srv);
});

async function account() {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const { key } = await createKey(srv.db.sql, a.id);
  return { ...a, key };
}

async function endpoint(key: string, rcv: Receiver) {
  const res = await api(srv.base, key, '/webhooks', { body: { url: rcv.url } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; secret: string };
}

const sendTest = (key: string, id: string) => api(srv.base, key, `/webhooks/${id}/test`, { method: 'POST' });

test('429/503 with Retry-After: the retry waits as asked, but never beyond the schedule\'s longest step', async () => {
  const a = await account();
  const rcv = await startReceiver();
  // 503 asking for 3 s (the schedule says 1 s), then 429 asking for an hour (capped at the longest step, 4 s), then 200.
  rcv.reply = (_d, i) => (i === 0 ? { status: 503, headers: { 'retry-after': '3' } } : i === 1 ? { status: 429, headers: { 'retry-after': '3600' } } : { status: 200 });
  const e = await endpoint(a.key, rcv);
  assert.equal((await sendTest(a.key, e.id)).status, 202);
  const got = await rcv.wait(3, undefined, 30_000);
  const gap1 = got[1]!.at - got[0]!.at;
  const gap2 = got[2]!.at - got[1]!.at;
  assert.ok(gap1 >= 2900, `the 503's Retry-After (3 s) was honoured: ${gap1} ms`);
  assert.ok(gap2 >= 3900 && gap2 < 10_000, `an hour's Retry-After is capped at the longest step (4 s): ${gap2} ms`);
  for (const d of got) verify(e.secret, d);
});

test('a redirect is not followed: the attempt fails with the redirect class and the target is never asked', async () => {
  const a = await account();
  const target = await startReceiver();
  const rcv = await startReceiver();
  rcv.reply = () => ({ status: 307, headers: { location: target.url } });
  const e = await endpoint(a.key, rcv);
  await sendTest(a.key, e.id);
  const d = await until('the delivery to fail', async () => {
    const [x] = (await api(srv.base, a.key, `/webhooks/${e.id}/deliveries`)).body.data;
    return x?.status === 'failed' && x;
  }, 30_000);
  assert.equal(d.attempts, 4);
  assert.equal(d.lastStatusCode, 307);
  assert.match(d.lastError, /^redirect:/);
  assert.equal(target.got.length, 0);
});

test('an endpoint failing for 5 days without a 2xx is disabled by its next failure', async () => {
  const a = await account();
  const rcv = await startReceiver();
  rcv.reply = () => ({ status: 500 });
  const e = await endpoint(a.key, rcv);
  await srv.db.sql`update kiln_private.webhook_endpoints set failing_since = now() - interval '5 days 1 minute' where id = ${e.id}`;
  await sendTest(a.key, e.id);
  const ep = await until('the endpoint to be disabled', async () => {
    const x = (await api(srv.base, a.key, `/webhooks/${e.id}`)).body;
    return x.enabled === false && x;
  });
  assert.match(ep.disabledReason, /5 days/);
  assert.equal(rcv.got.length, 1);
});

test('a refused connection is classed and starts the endpoint\'s failing streak', async () => {
  const a = await account();
  const rcv = await startReceiver();
  const e = await endpoint(a.key, rcv);
  await rcv.close();
  await sendTest(a.key, e.id);
  const d = await until('a failed attempt', async () => {
    const [x] = (await api(srv.base, a.key, `/webhooks/${e.id}/deliveries`)).body.data;
    return x?.attempts >= 1 && x;
  });
  assert.match(d.lastError, /^refused:/);
  const [row] = await srv.db.sql`select failing_since from kiln_private.webhook_endpoints where id = ${e.id}`;
  assert.ok(row.failing_since);
});

test('20 deliveries hanging at one account\'s endpoint do not delay another account\'s delivery', async () => {
  const slow = await account();
  const fast = await account();
  const hang = await startReceiver();
  hang.reply = () => ({ hang: true });
  const quick = await startReceiver();
  const eSlow = await endpoint(slow.key, hang);
  const eFast = await endpoint(fast.key, quick);
  for (let i = 0; i < 20; i++) assert.equal((await sendTest(slow.key, eSlow.id)).status, 202);
  await hang.wait(1);
  const sent = Date.now();
  assert.equal((await sendTest(fast.key, eFast.id)).status, 202);
  const [d] = await quick.wait(1, undefined, 15_000);
  const ms = d!.at - sent;
  assert.ok(ms < 2000, `the other account's delivery arrived ${ms} ms after its event`);
  verify(eFast.secret, d!);
  // The hanging endpoint is attempted one delivery at a time (its own queue).
  assert.equal(hang.got.length, 1);
});

test('a redeliver while an attempt is in flight is still sent: the in-flight outcome is only logged', async () => {
  const a = await account();
  const rcv = await startReceiver();
  rcv.reply = (_d, i) => (i === 0 ? { status: 200, delayMs: 1500 } : { status: 200 });
  const e = await endpoint(a.key, rcv);
  await sendTest(a.key, e.id);
  const [first] = await rcv.wait(1);
  const id = String(first!.headers['webhook-id']);
  const [logged] = (await api(srv.base, a.key, `/webhooks/${e.id}/deliveries`)).body.data;
  assert.equal(logged.webhookId, id);
  assert.equal((await api(srv.base, a.key, `/webhooks/${e.id}/deliveries/${logged.id}/redeliver`, { method: 'POST' })).status, 202);
  const [, second] = await rcv.wait(2, undefined, 15_000);
  assert.equal(second!.headers['webhook-id'], id);
  assert.equal(second!.body, first!.body);
  const d = await until('both attempts to be recorded', async () => {
    const [x] = (await api(srv.base, a.key, `/webhooks/${e.id}/deliveries`)).body.data;
    return x.status === 'delivered' && x.attempts === 2 && x;
  });
  assert.equal(d.lastStatusCode, 200);
});

test('the webhook-id a receiver got finds its message in the delivery log and redelivers it, at every endpoint and on every retry', async () => {
  const a = await account();
  const other = await account();
  const rcvA = await startReceiver();
  const rcvB = await startReceiver();
  rcvA.reply = (_d, i) => ({ status: i === 0 ? 500 : 200 }); // one retry at A
  const eA = await endpoint(a.key, rcvA);
  const eB = await endpoint(a.key, rcvB);
  const gen = await api(srv.base, a.key, '/generations', { body: { type: 'code', model: 'local/coder', prompt: 'one event, two endpoints' } });
  assert.equal(gen.status, 202, JSON.stringify(gen.body));

  const [firstA, retryA] = await rcvA.wait(2, (d) => d.json?.type === 'generation.completed');
  const [firstB] = await rcvB.wait(1, (d) => d.json?.type === 'generation.completed');
  const seen = String(firstB!.headers['webhook-id']);
  assert.match(seen, /^msg_\d+$/);
  assert.equal(firstA!.headers['webhook-id'], seen, 'the same message id at every endpoint');
  assert.equal(retryA!.headers['webhook-id'], seen, 'and on every retry');

  // The receiver looks its webhook-id up in each endpoint's log: it is the delivery's `id`.
  const logged = async (endpointId: string) => {
    const page = await api(srv.base, a.key, `/webhooks/${endpointId}/deliveries`);
    assert.equal(page.status, 200);
    return (page.body.data as any[]).find((d) => d.id === seen);
  };
  const inA = await until('A\'s delivery to be recorded as delivered', async () => {
    const d = await logged(eA.id);
    return d?.status === 'delivered' && d;
  });
  assert.equal(inA.webhookId, seen, 'webhookId still names it');
  assert.match(inA.deliveryId, /^[0-9a-f-]{36}$/);
  assert.equal(inA.attempts, 2);
  const inB = await logged(eB.id);
  assert.ok(inB, 'B\'s log names the same message by the same id');
  assert.notEqual(inB.deliveryId, inA.deliveryId, 'each endpoint has its own delivery of it');

  // Redeliver by the webhook-id the receiver saw: the same message again, at that endpoint only.
  const re = await api(srv.base, a.key, `/webhooks/${eA.id}/deliveries/${seen}/redeliver`, { method: 'POST' });
  assert.equal(re.status, 202, JSON.stringify(re.body));
  const [, , againA] = await rcvA.wait(3, (d) => d.json?.type === 'generation.completed');
  assert.equal(againA!.headers['webhook-id'], seen);
  assert.equal(againA!.body, firstA!.body);
  verify(eA.secret, againA!);
  // The delivery's uuid is still accepted.
  assert.equal((await api(srv.base, a.key, `/webhooks/${eB.id}/deliveries/${inB.deliveryId}/redeliver`, { method: 'POST' })).status, 202);
  const [, againB] = await rcvB.wait(2, (d) => d.json?.type === 'generation.completed');
  assert.equal(againB!.headers['webhook-id'], seen);
  assert.equal(rcvB.got.filter((d) => d.json?.type === 'generation.completed').length, 2, 'A\'s redeliver sent nothing to B');

  // Unknown or another scope's: 404; not an id at all: 400 saying what is accepted.
  for (const [key, ep, id] of [[a.key, eA.id, 'msg_9223372036854775807'], [other.key, eA.id, seen]] as const) {
    const r = await api(srv.base, key, `/webhooks/${ep}/deliveries/${id}/redeliver`, { method: 'POST' });
    assert.equal(r.status, 404, `${id}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.type, 'not_found');
  }
  for (const bad of ['msg_', 'msg_x1', 'msg_99999999999999999999', 'evt_1', '12']) {
    const r = await api(srv.base, a.key, `/webhooks/${eA.id}/deliveries/${bad}/redeliver`, { method: 'POST' });
    assert.equal(r.status, 400, bad);
    assert.equal(r.body.error.message, 'deliveryId: must be a webhook-id (`msg_…`) or a delivery uuid');
  }
});
