// The batch API (docs/api.md, "Batches"): a JSONL batch of mixed lines completes, its results name
// every custom_id once and the account is charged exactly the sum of its completed lines;
// validation is all or nothing with a pointer per problem; a budget that runs out part-way;
// cancel; Idempotency-Key; isolation and scopes; GET /generations?batchId=.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { startTestWorker, until } from './_generations.ts';
import { openSse } from './_live.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

let srv: TestServer;

before(async () => {
  srv = await startServer();
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'local/slowish', name: 'slowish', category: 'text', provider: 'local', upstream: { delayMs: 300, stream: false },
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 1,
  })})`;
  await startTestWorker(srv);
});

async function account(opts: { budgetMicros?: number } = {}) {
  const a = await createAccount(srv.db.sql, { tier: 'pro', ...opts });
  return { id: a.id, key: (await createKey(srv.db.sql, a.id)).key };
}

function jsonl(lines: unknown[]): string {
  return lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n';
}

const line = (custom_id: string, body: Record<string, unknown>) => ({ custom_id, method: 'POST', url: '/api/v1/generations', body });

async function post(key: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${srv.base}/batches`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/jsonl', ...headers }, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

async function results(key: string, id: string) {
  const res = await fetch(`${srv.base}/batches/${id}/results`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(res.status, 200, res.status === 200 ? '' : await res.text());
  assert.match(res.headers.get('content-type')!, /^application\/jsonl/);
  return (await res.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

async function settled(key: string, id: string) {
  return until('the batch ended', async () => {
    const b = (await api(srv.base, key, `/batches/${id}`)).body;
    return ['completed', 'canceled', 'expired'].includes(b.status) ? b : null;
  }, 60_000, 100);
}

test('a mixed batch completes: every custom_id once in the results, charged exactly the sum of its lines', async () => {
  const { key } = await account();
  const lines = [
    line('img-1', { type: 'image', prompt: 'a red square' }),
    line('code-1', { type: 'code', prompt: 'a button', targetLanguage: 'tsx' }),
    line('code-2', { type: 'code', prompt: 'a card', model: 'local/slowish' }),
    line('img-2', { type: 'image', prompt: 'a blue circle', aspectRatio: '16:9' }),
  ];
  const res = await post(key, jsonl(lines));
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.equal(res.body.status, 'in_progress');
  assert.deepEqual(res.body.requestCounts, { total: 4, completed: 0, failed: 0, canceled: 0 });
  assert.match(res.headers.get('location')!, new RegExp(`/api/v1/batches/${res.body.id}$`));
  const ev = await openSse(`${srv.base}/batches/${res.body.id}/events`, { authorization: `Bearer ${key}` });
  const done = await settled(key, res.body.id);
  assert.equal(done.status, 'completed');
  assert.deepEqual(done.requestCounts, { total: 4, completed: 4, failed: 0, canceled: 0 });
  const out = await results(key, res.body.id);
  assert.deepEqual(out.map((o) => o.custom_id).sort(), ['code-1', 'code-2', 'img-1', 'img-2']);
  assert.ok(out.every((o) => o.response?.status_code === 200 && o.response.body.status === 'completed' && o.response.body.batchId === res.body.id));
  const [{ sum }] = await srv.db.sql`select coalesce(sum(c.settled_micros), 0)::bigint::text as sum from kiln_private.charges c
    join kiln_private.generations g on g.id = c.generation_id where g.batch_id = ${res.body.id} and c.status = 'settled'`;
  assert.equal(Number(sum), out.reduce((n, o) => n + o.response.body.result.costMicros, 0));
  assert.equal(done.spentMicros, Number(sum));
  const listed = await api(srv.base, key, `/generations?batchId=${res.body.id}&limit=2`);
  assert.equal(listed.status, 200, JSON.stringify(listed.body));
  assert.equal(listed.body.data.length, 2);
  const next = await api(srv.base, key, `/generations?batchId=${res.body.id}&cursor=${listed.body.nextCursor}`);
  assert.equal(next.body.data.length, 2);
  assert.deepEqual([...listed.body.data, ...next.body.data].map((g: { customId: string }) => g.customId), ['img-2', 'code-2', 'code-1', 'img-1'], 'last line first');
  await ev.ended;
  assert.equal(ev.events.at(-1)!.event, 'status');
  assert.equal(JSON.parse(ev.events.at(-1)!.data).status, 'completed');
  const page = await api(srv.base, key, '/batches');
  assert.equal(page.body.data[0].id, res.body.id);
  // One batch.completed event (to GET /events and webhooks), and no generation.* event per line.
  const events = await srv.db.sql`select type, subject_id from kiln_private.events where subject_id = ${res.body.id}
    or subject_id in (select id from kiln_private.generations where batch_id = ${res.body.id})`;
  assert.deepEqual(events.map((e) => e.type), ['batch.completed']);
});

test('a batch__run job keeps its lines flowing: later groups start in its completion call, under the same job; settled exactly once', async () => {
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'local/instant', name: 'instant', category: 'text', provider: 'local', upstream: { delayMs: 0, stream: false },
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 1,
  })})`;
  // A pro account: 4 parallel slots, so groups of 2 lines and 30 groups for 60 lines.
  const { id, key } = await account();
  const n = 60;
  // A job's completion call that starts lines takes the account's slot lock before the pool's row,
  // as another job's start does: no deadlock between them (Postgres would break one after 1 s).
  const deadlocks = async () => Number((await srv.db.sql`select deadlocks from pg_stat_database where datname = current_database()`)[0]!.deadlocks);
  const deadlocksBefore = await deadlocks();
  const res = await post(key, jsonl(Array.from({ length: n }, (_, i) => line(`l-${i}`, { type: 'code', prompt: `line ${i}`, model: 'local/instant' }))));
  assert.equal(res.status, 202, JSON.stringify(res.body));
  const b = await settled(key, res.body.id);
  assert.equal(b.status, 'completed');
  assert.deepEqual(b.requestCounts, { total: n, completed: n, failed: 0, canceled: 0 });
  // One queued job per group would be 30 jobs; a job that goes on runs many groups.
  const [{ jobs, groups }] = await srv.db.sql`select count(distinct job_id)::int as jobs, count(distinct (batch_line - 1) / 2)::int as groups
    from kiln_private.generations where batch_id = ${res.body.id}`;
  assert.equal(groups, n / 2);
  assert.ok(jobs <= 8, `${n} lines ran under ${jobs} batch__run jobs (one per group would be ${groups})`);
  // (The statistics collector reports a backend's counts when its transaction ends, within a second.)
  await new Promise((r) => setTimeout(r, 1100));
  await srv.db.sql`select pg_stat_clear_snapshot()`;
  assert.equal(await deadlocks(), deadlocksBefore, 'no deadlock');
  // Every line settled once, and the pool holds nothing any more: spend is the sum of the lines.
  const [c] = await srv.db.sql`select count(*)::int as charges, count(*) filter (where ch.status = 'settled')::int as settled,
      coalesce(sum(ch.settled_micros), 0)::bigint as spent, coalesce(sum(g.cost_micros), 0)::bigint as costs
    from kiln_private.generations g join kiln_private.charges ch on ch.generation_id = g.id where g.batch_id = ${res.body.id}`;
  assert.deepEqual({ charges: c!.charges, settled: c!.settled }, { charges: n, settled: n });
  assert.equal(c!.spent, c!.costs);
  assert.ok(Number(c!.spent) > 0);
  const [{ held, used }] = await srv.db.sql`select coalesce(sum(held_micros), 0)::bigint as held, coalesce(sum(settled_micros), 0)::bigint as used
    from kiln_private.budget_periods where pool_id = ${id}`;
  assert.equal(Number(held), 0);
  assert.equal(used, c!.spent);
});

test('validation is all or nothing: every problem with its pointer, nothing created', async () => {
  const { id, key } = await account();
  const body = jsonl([
    line('ok', { type: 'code', prompt: 'fine' }),
    '{not json',
    line('ok', { type: 'code', prompt: 'duplicate id' }),
    { custom_id: 'm', method: 'GET', url: '/api/v1/generations', body: { type: 'code', prompt: 'x' } },
    { custom_id: 'u', method: 'POST', url: '/v1/chat/completions', body: { type: 'code', prompt: 'x' } },
    line('bad-model', { type: 'code', prompt: 'x', model: 'no/such-model' }),
    line('', { type: 'code', prompt: 'x' }),
    line('bad-type', { type: 'video', prompt: 'x' }),
  ]);
  const res = await post(key, body);
  assert.equal(res.status, 400, JSON.stringify(res.body));
  assert.equal(res.body.error.type, 'invalid_request');
  const paths = res.body.error.details.map((d: { path: string }) => d.path);
  assert.deepEqual(paths, ['/lines/2', '/lines/3/custom_id', '/lines/4/method', '/lines/5/url', '/lines/6/body/model', '/lines/7/custom_id', '/lines/8/body/type']);
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.batches where account_id = ${id}`;
  assert.equal(n, 0);
  const [{ g }] = await srv.db.sql`select count(*)::int as g from kiln_private.generations where account_id = ${id}`;
  assert.equal(g, 0);
  // The wrong media type, and an empty batch.
  assert.equal((await post(key, body, { 'content-type': 'application/json' })).status, 415);
  assert.equal((await post(key, '\n\n')).status, 400);
});

test('a budget that runs out part-way: spend stops at the budget, the rest fail insufficient_quota, uncharged', async () => {
  // Each local image reserves and costs the same: a budget of exactly 3 of them.
  const probe = await account();
  const one = await api(srv.base, probe.key, '/generations', { body: { type: 'image', prompt: 'price probe' }, headers: { prefer: 'wait=20' } });
  const price = one.body.result.costMicros as number;
  const { key } = await account({ budgetMicros: price * 3 });
  const res = await post(key, jsonl(Array.from({ length: 8 }, (_, i) => line(`l${i}`, { type: 'image', prompt: `budget ${i}` }))));
  assert.equal(res.status, 202, JSON.stringify(res.body));
  const done = await settled(key, res.body.id);
  assert.equal(done.requestCounts.completed, 3);
  assert.equal(done.requestCounts.failed, 5);
  assert.equal(done.spentMicros, price * 3);
  const out = await results(key, res.body.id);
  const failed = out.filter((o) => o.error);
  assert.equal(failed.length, 5);
  assert.ok(failed.every((o) => o.error.code === 'insufficient_quota'), JSON.stringify(failed));
});

test('cancel mid-batch: nothing not started is charged; Idempotency-Key replays; isolation and scopes', async () => {
  const { key } = await account();
  const body = jsonl(Array.from({ length: 40 }, (_, i) => line(`c${i}`, { type: 'code', prompt: `cancel ${i}`, model: 'local/slowish' })));
  const res = await post(key, body, { 'idempotency-key': 'batch-one' });
  assert.equal(res.status, 202);
  const again = await post(key, body, { 'idempotency-key': 'batch-one' });
  assert.equal(again.status, 202);
  assert.equal(again.body.id, res.body.id);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  assert.equal((await post(key, jsonl([line('x', { type: 'code', prompt: 'other' })]), { 'idempotency-key': 'batch-one' })).status, 422);
  await until('a line completed', async () => (await api(srv.base, key, `/batches/${res.body.id}`)).body.requestCounts.completed >= 1, 30_000, 50);
  const canceled = await api(srv.base, key, `/batches/${res.body.id}/cancel`, { method: 'POST' });
  assert.equal(canceled.status, 200, JSON.stringify(canceled.body));
  assert.ok(['canceling', 'canceled'].includes(canceled.body.status));
  const done = await settled(key, res.body.id);
  assert.equal(done.status, 'canceled');
  const [{ type }] = await srv.db.sql`select type from kiln_private.events where subject_id = ${res.body.id}`;
  assert.equal(type, 'batch.canceled');
  const c = done.requestCounts;
  assert.equal(c.completed + c.failed + c.canceled, 40);
  assert.ok(c.canceled >= 30, JSON.stringify(c));
  const [{ charged }] = await srv.db.sql`select count(*)::int as charged from kiln_private.charges ch join kiln_private.generations g on g.id = ch.generation_id
    where g.batch_id = ${res.body.id} and ch.status = 'settled'`;
  assert.equal(charged, c.completed, 'only completed lines are charged');
  assert.equal((await api(srv.base, key, `/batches/${res.body.id}/cancel`, { method: 'POST' })).status, 409);

  const other = await account();
  assert.equal((await api(srv.base, other.key, `/batches/${res.body.id}`)).status, 404);
  assert.equal((await api(srv.base, other.key, `/batches/${res.body.id}/cancel`, { method: 'POST' })).status, 404);
  assert.equal((await fetch(`${srv.base}/batches/${res.body.id}/results`, { headers: { authorization: `Bearer ${other.key}` } })).status, 404);
  assert.deepEqual((await api(srv.base, other.key, `/generations?batchId=${res.body.id}`)).body.data, []);
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const readOnly = (await createKey(srv.db.sql, a.id, { scopes: ['read'] })).key;
  assert.equal((await post(readOnly, jsonl([line('r', { type: 'code', prompt: 'x' })]))).status, 403);
  assert.equal((await api(srv.base, readOnly, `/batches/${res.body.id}/cancel`, { method: 'POST' })).status, 403);
});

test('a batch past its expiry: lines not started end expired, uncharged; the batch is expired', async () => {
  const { key } = await account();
  const res = await post(key, jsonl(Array.from({ length: 30 }, (_, i) => line(`e${i}`, { type: 'code', prompt: `expire ${i}`, model: 'local/slowish' }))));
  assert.equal(res.status, 202);
  await srv.db.sql`update kiln_private.batches set expires_at = now() where id = ${res.body.id}`;
  // What the worker's sweep does every heartbeat (it may have done it already).
  await srv.db.sql`select kiln.expire_batches(10)`;
  await srv.db.sql`select kiln.end_batch_lines(${res.body.id}::uuid)`;
  const done = await settled(key, res.body.id);
  assert.equal(done.status, 'expired');
  const out = await results(key, res.body.id);
  assert.equal(out.length, 30);
  const expired = out.filter((o) => o.error?.code === 'expired');
  assert.ok(expired.length >= 20, JSON.stringify(done.requestCounts));
  assert.equal(done.requestCounts.completed + done.requestCounts.failed, 30);
  const [{ charged }] = await srv.db.sql`select count(*)::int as charged from kiln_private.charges ch join kiln_private.generations g on g.id = ch.generation_id
    where g.batch_id = ${res.body.id} and g.error like 'expired%'`;
  assert.equal(charged, 0, 'expired lines reserved nothing');
});
