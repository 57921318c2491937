// Webhooks end to end: endpoints over REST, deliveries from a real worker to a loopback receiver,
// every signature verified with the `standardwebhooks` package as a receiver would. Loopback
// receivers need KILN_WEBHOOK_ALLOW_PRIVATE (webhooks.ssrf.test.ts checks the refusals without it).

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { startTestWorker, until, waitFor } from './_generations.ts';
import { errorReply, startOpenAIPeer, type OpenAIPeer } from './_openai-peer.ts';
import { api, createAccount, createKey, onCleanup, startServer, type TestServer } from './_setup.ts';
import { chatAfter, peerModels, saveWorkflow, startRun, userText, waitRun } from './_workflows.ts';
import { startReceiver, verify, type Receiver } from './_webhooks.ts';

let srv: TestServer;
let peer: OpenAIPeer;

before(async () => {
  peer = await startOpenAIPeer();
  onCleanup(() => peer.close());
  peer.script((req) => {
    const text = userText(req);
    if (text.includes('[fail]')) return errorReply(400, 'invalid_request_error', null, 'no');
    if (text.includes('[hang]')) return { hang: true };
    return chatAfter(5, 'ok');
  });
  srv = await startServer({ config: { webhookAllowPrivate: true, webhookRetrySchedule: [1, 1, 1] } });
  await peerModels(srv.db.sql, peer);
  await startTestWorker(srv);
});

async function account() {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const { key } = await createKey(srv.db.sql, a.id);
  return { ...a, key };
}

async function endpoint(key: string, rcv: Receiver, extra: Record<string, unknown> = {}) {
  const res = await api(srv.base, key, '/webhooks', { body: { url: rcv.url, ...extra } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; secret: string; events: string[] };
}

async function generate(key: string, body: Record<string, unknown>): Promise<string> {
  const res = await api(srv.base, key, '/generations', { body });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return res.body.id;
}

test('endpoints: create shows the secret once; list, get and patch never do; another scope gets 404; bad input is 400', async () => {
  const a = await account();
  const b = await account();
  const rcv = await startReceiver();
  const e = await endpoint(a.key, rcv, { description: 'orders' });
  assert.match(e.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.equal(Buffer.from(e.secret.slice(6), 'base64').length, 32);
  assert.deepEqual(e.events, ['generation.completed', 'generation.failed', 'workflow_run.completed', 'workflow_run.failed', 'budget.threshold', 'webhook.test', 'workflow.saved', 'workflow.deleted', 'batch.completed', 'batch.canceled', 'batch.expired']);

  const list = await api(srv.base, a.key, '/webhooks');
  assert.equal(list.status, 200);
  assert.equal(list.body.data.length, 1);
  const got = await api(srv.base, a.key, `/webhooks/${e.id}`);
  assert.equal(got.status, 200);
  assert.deepEqual(Object.keys(got.body).sort(), ['createdAt', 'description', 'disabledReason', 'enabled', 'events', 'id', 'url']);
  assert.equal(JSON.stringify([list.body, got.body]).includes(e.secret.slice(6, 20)), false);

  const patched = await api(srv.base, a.key, `/webhooks/${e.id}`, { method: 'PATCH', body: { events: ['generation.failed'], description: null } });
  assert.equal(patched.status, 200, JSON.stringify(patched.body));
  assert.deepEqual(patched.body.events, ['generation.failed']);
  assert.equal(patched.body.description, null);
  assert.equal(patched.body.secret, undefined);

  for (const [method, path, body] of [['GET', `/webhooks/${e.id}`], ['PATCH', `/webhooks/${e.id}`, { enabled: false }], ['DELETE', `/webhooks/${e.id}`],
    ['GET', `/webhooks/${e.id}/deliveries`], ['POST', `/webhooks/${e.id}/rotate-secret`], ['POST', `/webhooks/${e.id}/test`]] as const) {
    const res = await api(srv.base, b.key, path, { method, body });
    assert.equal(res.status, 404, `${method} ${path} by another account: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error.type, 'not_found');
  }
  assert.equal((await api(srv.base, b.key, '/webhooks')).body.data.length, 0);

  const bad: Array<[unknown, RegExp]> = [
    [{ url: rcv.url, events: ['generation.done'] }, /^events\.0: must be one of/],
    [{ url: rcv.url, events: [] }, /^events: must name at least one/],
    [{ url: 'not a url' }, /^url: must be an absolute URL/],
    [{ url: 'ftp://example.com/x' }, /^url: must use https/],
    [{}, /^url:/],
  ];
  for (const [body, msg] of bad) {
    const res = await api(srv.base, a.key, '/webhooks', { body });
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.error.type, 'invalid_request');
    assert.match(res.body.error.message, msg);
  }
  const { key: readOnly } = await createKey(srv.db.sql, a.id, { scopes: ['read'] });
  assert.equal((await api(srv.base, readOnly, '/webhooks', { body: { url: rcv.url } })).status, 403);
  assert.equal((await api(srv.base, readOnly, '/webhooks')).status, 200);
  assert.equal((await api(srv.base, null, '/webhooks')).status, 401);

  assert.equal((await api(srv.base, a.key, `/webhooks/${e.id}`, { method: 'DELETE' })).status, 204);
  assert.equal((await api(srv.base, a.key, `/webhooks/${e.id}`)).status, 404);
});

test('completed, failed and canceled jobs are delivered, signed, with data = the GET /generations body', async () => {
  const a = await account();
  const rcv = await startReceiver();
  const e = await endpoint(a.key, rcv);

  const done = await generate(a.key, { type: 'code', model: 'local/coder', prompt: 'a button' });
  const failed = await generate(a.key, { type: 'code', model: 'peer/coder', prompt: '[fail]' });
  const hanging = await generate(a.key, { type: 'code', model: 'peer/coder', prompt: '[hang]' });
  await until('the hanging call to reach the peer', () => peer.requests.some((r) => userText(r).includes('[hang]')));
  assert.equal((await api(srv.base, a.key, `/generations/${hanging}/cancel`, { method: 'POST' })).status, 200);

  const got = await rcv.wait(3);
  const byId = new Map(got.map((d) => [verify(e.secret, d).data.id, d]));
  for (const id of [done, failed, hanging]) {
    const d = byId.get(id);
    assert.ok(d, `a delivery for ${id}`);
    const msg = verify(e.secret, d);
    const now = (await api(srv.base, a.key, `/generations/${id}`)).body;
    assert.deepEqual(msg.data, now, 'data is the GET body');
    assert.equal(msg.type, id === done ? 'generation.completed' : 'generation.failed');
    assert.match(msg.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(d.headers['content-type'], 'application/json');
  }
  assert.equal(verify(e.secret, byId.get(hanging)!).data.error, 'canceled');

  const log = await api(srv.base, a.key, `/webhooks/${e.id}/deliveries`);
  assert.equal(log.status, 200);
  assert.equal(log.body.data.length, 3);
  for (const d of log.body.data) {
    assert.equal(d.status, 'delivered');
    assert.equal(d.attempts, 1);
    assert.equal(d.lastStatusCode, 200);
    assert.ok(got.some((g) => g.headers['webhook-id'] === d.id), 'the log\'s id is the webhook-id');
    assert.equal(d.webhookId, d.id, 'webhookId repeats it');
    assert.notEqual(d.deliveryId, d.id, 'the delivery\'s own uuid is apart from its message\'s id');
  }
});

test('image results: data carries a signed URL rendered once, and a redeliver sends the identical message', async () => {
  const a = await account();
  const rcv = await startReceiver();
  const e = await endpoint(a.key, rcv);
  const id = await generate(a.key, { type: 'image', model: 'local/sketch', prompt: 'a kiln' });
  const [first] = await rcv.wait(1);
  const msg = verify(e.secret, first!);
  assert.equal(msg.data.id, id);
  assert.match(msg.data.result.url, /\/files\/.+\?expires=\d+&sig=/);
  const img = await fetch(msg.data.result.url);
  assert.equal(img.status, 200);

  const [d] = (await api(srv.base, a.key, `/webhooks/${e.id}/deliveries`)).body.data;
  await new Promise((r) => setTimeout(r, 1100)); // a later second: a re-rendered URL would differ
  const re = await api(srv.base, a.key, `/webhooks/${e.id}/deliveries/${d.id}/redeliver`, { method: 'POST' });
  assert.equal(re.status, 202);
  const [, second] = await rcv.wait(2);
  assert.equal(second!.headers['webhook-id'], first!.headers['webhook-id']);
  assert.equal(second!.body, first!.body, 'the same body, byte for byte');
  verify(e.secret, second!);
  const after = await until('the redelivery to be recorded', async () => {
    const x = (await api(srv.base, a.key, `/webhooks/${e.id}/deliveries`)).body.data[0];
    return x.status === 'delivered' && x.attempts === 2 && x;
  });
  assert.equal(after.attempts, 2);
});

test('500 → 500 → 200: three attempts of one message (one webhook-id), then delivered', async () => {
  const a = await account();
  const rcv = await startReceiver();
  rcv.reply = (_d, i) => ({ status: i < 2 ? 500 : 200 });
  const e = await endpoint(a.key, rcv);
  await generate(a.key, { type: 'code', model: 'local/coder', prompt: 'retry me' });
  const got = await rcv.wait(3);
  assert.equal(new Set(got.map((d) => d.headers['webhook-id'])).size, 1);
  assert.equal(new Set(got.map((d) => d.body)).size, 1);
  for (const d of got) verify(e.secret, d);
  assert.ok(got[1]!.at - got[0]!.at >= 900, `the first retry waited its 1 s step (${got[1]!.at - got[0]!.at} ms)`);
  const d = await until('the log to say delivered', async () => {
    const [x] = (await api(srv.base, a.key, `/webhooks/${e.id}/deliveries`)).body.data;
    return x.status === 'delivered' && x;
  });
  assert.equal(d.attempts, 3);
  assert.equal(d.lastStatusCode, 200);
  assert.equal(d.lastError, null);
  const attempts = await srv.db.sql`select status_code, error_class from kiln_private.webhook_attempts where delivery_id = ${d.deliveryId} order by at`;
  assert.deepEqual(attempts.map((x) => [x.status_code, x.error_class]), [[500, 'status'], [500, 'status'], [200, null]]);
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(rcv.got.length, 3, 'nothing after the 2xx');
});

test('the schedule runs out: failed after 1 + 3 attempts, with the error class and no response body stored', async () => {
  const a = await account();
  const rcv = await startReceiver();
  rcv.reply = () => ({ status: 502 });
  const e = await endpoint(a.key, rcv);
  await generate(a.key, { type: 'code', model: 'local/coder', prompt: 'never' });
  const d = await until('the delivery to fail', async () => {
    const [x] = (await api(srv.base, a.key, `/webhooks/${e.id}/deliveries`)).body.data;
    return x?.status === 'failed' && x;
  }, 30_000);
  assert.equal(d.attempts, 4);
  assert.equal(rcv.got.length, 4);
  assert.equal(d.lastStatusCode, 502);
  assert.equal(d.lastError, 'status: answered 502');
  assert.equal(d.nextAttemptAt, null);
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.webhook_deliveries where last_error like '%receiver body%'`;
  assert.equal(n, 0);
  // The endpoint stays enabled (5 days of failures disable it, not one message).
  assert.equal((await api(srv.base, a.key, `/webhooks/${e.id}`)).body.enabled, true);
});

test('410 disables the endpoint, with the reason; nothing more is sent until it is enabled again', async () => {
  const a = await account();
  const rcv = await startReceiver();
  rcv.reply = () => ({ status: 410 });
  const e = await endpoint(a.key, rcv);
  await generate(a.key, { type: 'code', model: 'local/coder', prompt: 'gone' });
  await rcv.wait(1);
  const ep = await until('the endpoint to be disabled', async () => {
    const x = (await api(srv.base, a.key, `/webhooks/${e.id}`)).body;
    return x.enabled === false && x;
  });
  assert.match(ep.disabledReason, /410/);
  const [d] = (await api(srv.base, a.key, `/webhooks/${e.id}/deliveries`)).body.data;
  assert.equal(d.status, 'failed');
  assert.equal(d.attempts, 1);
  await generate(a.key, { type: 'code', model: 'local/coder', prompt: 'while disabled' });
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(rcv.got.length, 1);
  assert.equal((await api(srv.base, a.key, `/webhooks/${e.id}/test`, { method: 'POST' })).status, 409);

  rcv.reply = () => ({ status: 200 });
  const on = await api(srv.base, a.key, `/webhooks/${e.id}`, { method: 'PATCH', body: { enabled: true } });
  assert.equal(on.body.enabled, true);
  assert.equal(on.body.disabledReason, null);
  const rec = await api(srv.base, a.key, `/webhooks/${e.id}/recover`, { body: { since: new Date(Date.now() - 3600_000).toISOString() } });
  assert.equal(rec.status, 202);
  assert.equal(rec.body.count, 1);
  const [, again] = await rcv.wait(2);
  assert.equal(again!.headers['webhook-id'], d.webhookId);
});

test('rotation: during the overlap both the new and the old secret verify every delivery', async () => {
  const a = await account();
  const rcv = await startReceiver();
  const e = await endpoint(a.key, rcv);
  const rot = await api(srv.base, a.key, `/webhooks/${e.id}/rotate-secret`, { method: 'POST' });
  assert.equal(rot.status, 200);
  assert.match(rot.body.secret, /^whsec_/);
  assert.notEqual(rot.body.secret, e.secret);
  assert.equal((await api(srv.base, a.key, `/webhooks/${e.id}/test`, { method: 'POST' })).status, 202);
  const [d] = await rcv.wait(1);
  assert.equal(String(d!.headers['webhook-signature']).split(' ').length, 2);
  assert.equal(verify(rot.body.secret, d!).type, 'webhook.test');
  assert.equal(verify(e.secret, d!).type, 'webhook.test');
  assert.throws(() => verify('whsec_' + Buffer.alloc(32, 7).toString('base64'), d!));
  // Past the overlap only the new secret signs.
  await srv.db.sql`update kiln_private.webhook_endpoints set old_secret_until = now() - interval '1 second' where id = ${e.id}`;
  await api(srv.base, a.key, `/webhooks/${e.id}/test`, { method: 'POST' });
  const [, d2] = await rcv.wait(2);
  assert.equal(String(d2!.headers['webhook-signature']).split(' ').length, 1);
  verify(rot.body.secret, d2!);
  assert.throws(() => verify(e.secret, d2!));
});

test('the test event reaches only its endpoint; event filters hold', async () => {
  const a = await account();
  const all = await startReceiver();
  const onlyFailed = await startReceiver();
  const eAll = await endpoint(a.key, all);
  const eFailed = await endpoint(a.key, onlyFailed, { events: ['generation.failed'] });
  assert.equal((await api(srv.base, a.key, `/webhooks/${eAll.id}/test`, { method: 'POST' })).status, 202);
  const [t] = await all.wait(1);
  assert.deepEqual(verify(eAll.secret, t!).data, { endpointId: eAll.id });

  await generate(a.key, { type: 'code', model: 'local/coder', prompt: 'ok' });
  await generate(a.key, { type: 'code', model: 'peer/coder', prompt: '[fail]' });
  await all.wait(3);
  const [f] = await onlyFailed.wait(1);
  assert.equal(verify(eFailed.secret, f!).type, 'generation.failed');
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(onlyFailed.got.length, 1, 'the filtered endpoint got neither the completion nor the test event');
});

test('runs are delivered with data = the GET run body; their outputs send no generation event', async () => {
  const a = await account();
  const rcv = await startReceiver();
  // Job and run events only (saving the workflows below is a workflow.saved event of its own).
  const e = await endpoint(a.key, rcv, { events: ['generation.completed', 'generation.failed', 'workflow_run.completed', 'workflow_run.failed'] });
  const wf = await saveWorkflow(srv, a.id, {
    nodes: [{ id: 'p', kind: 'prompt', output: 'code', model: 'local/coder', prompt: 'hello' }, { id: 'o', kind: 'output' }],
    edges: [{ from: 'p', to: 'o' }],
  });
  const run = await startRun(srv, a.key, wf);
  const body = await waitRun(srv, a.key, wf, run);
  assert.equal(body.status, 'completed');
  const [d] = await rcv.wait(1);
  const msg = verify(e.secret, d!);
  assert.equal(msg.type, 'workflow_run.completed');
  assert.deepEqual(msg.data, body);
  await new Promise((r) => setTimeout(r, 1000));
  assert.deepEqual(rcv.got.map((x) => x.json.type), ['workflow_run.completed']);

  const failing = await saveWorkflow(srv, a.id, {
    nodes: [{ id: 'p', kind: 'prompt', output: 'code', model: 'peer/coder', prompt: '[fail]' }, { id: 'o', kind: 'output' }],
    edges: [{ from: 'p', to: 'o' }],
  });
  const run2 = await startRun(srv, a.key, failing);
  const body2 = await waitRun(srv, a.key, failing, run2);
  assert.equal(body2.status, 'failed');
  const [, d2] = await rcv.wait(2);
  const msg2 = verify(e.secret, d2!);
  assert.equal(msg2.type, 'workflow_run.failed');
  assert.deepEqual(msg2.data, body2);
});

test('a workspace-bound key\'s endpoint receives the workspace\'s jobs, not the member\'s personal ones', async () => {
  const owner = await account();
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('team', ${owner.id})`;
  await srv.db.sql`select kiln.set_workspace_plan(${ws.id}, 'active', null, true)`;
  const { key: wsKey } = await createKey(srv.db.sql, owner.id, { workspaceId: ws.id });
  const rcvWs = await startReceiver();
  const rcvMe = await startReceiver();
  const eWs = await endpoint(wsKey, rcvWs);
  await endpoint(owner.key, rcvMe);
  assert.equal((await api(srv.base, owner.key, `/webhooks/${eWs.id}`)).status, 404, 'the personal scope does not see the workspace endpoint');
  const id = await generate(wsKey, { type: 'code', model: 'local/coder', prompt: 'team job' });
  const [d] = await rcvWs.wait(1);
  assert.equal(verify(eWs.secret, d!).data.id, id);
  await waitFor(srv, wsKey, id);
  await new Promise((r) => setTimeout(r, 800));
  assert.equal(rcvMe.got.length, 0);
});
