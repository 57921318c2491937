// Server-sent events across processes (`kiln api` + `kiln worker`): a generation's status events,
// a multi-output run read across a forced disconnect and resumed with Last-Event-ID (no gap, no
// duplicate, the terminal state last), the per-account stream limit, the GETs' 400/404 rules,
// and streams ending when the API shuts down.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { createWorkflow } from '../src/workflows/authoring.ts';
import { openSse, spawnKiln, type SseEvent, type Spawned } from './_live.ts';
import { api, createAccount, createKey, createTestDb, testConfig, type TestDb } from './_setup.ts';

let db: TestDb;
let apiProc: Spawned;
let key: string;
let accountId: string;
const MAX_STREAMS = 3;

before(async () => {
  db = await createTestDb();
  for (const [id, delayMs] of [['local/slow-coder', 1500], ['local/step-coder', 400], ['local/stuck-coder', 60_000]] as const) {
    await db.sql`select kiln.upsert_model(${db.sql.json({
      id, name: id, category: 'text', provider: 'local', upstream: { delayMs },
      cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 1,
    })})`;
  }
  const a = await createAccount(db.sql, { tier: 'enterprise' });
  accountId = a.id;
  key = (await createKey(db.sql, a.id)).key;
  [apiProc] = await Promise.all([spawnKiln('api', db.url, { KILN_MAX_STREAMS: String(MAX_STREAMS) }), spawnKiln('worker', db.url)]);
});

const auth = (k = key) => ({ authorization: `Bearer ${k}` });

/** The ids' status-and-settled part (a run's ids add where each output in flight stands: `:ordinal.S.C.P.G`). */
function ids(events: SseEvent[]): number[] {
  return events.map((e) => Number(e.id!.split(':')[0]));
}

test('a generation: one status event per status, ids ascending, the terminal body last, then the stream closes', async () => {
  const created = await api(apiProc.base, key, '/generations', { body: { type: 'code', prompt: 'stream me', model: 'local/slow-coder' } });
  const s = await openSse(`${apiProc.base}/generations/${created.body.id}/events`, auth());
  assert.equal(s.status, 200);
  assert.match(s.headers.get('content-type')!, /^text\/event-stream/);
  await s.ended;
  // The local model streams its text (delta events, docs/api.md "Streaming") between the statuses.
  const statuses = s.events.filter((e) => e.event === 'status');
  assert.ok(statuses.length >= 2, JSON.stringify(s.events));
  assert.ok(s.events.every((e) => ['status', 'delta'].includes(e.event!)));
  assert.equal(s.events.filter((e) => e.event === 'delta').map((e) => JSON.parse(e.data).text).join(''), JSON.parse(s.events.at(-1)!.data).result.code);
  const seen = ids(statuses);
  assert.deepEqual(seen, [...seen].sort((a, b) => a - b));
  assert.equal(new Set(seen).size, seen.length, 'no duplicate');
  assert.deepEqual(seen.slice(-2), [2, 3], 'processing, then the terminal state last');
  const last = JSON.parse(s.events.at(-1)!.data);
  const get = await api(apiProc.base, key, `/generations/${created.body.id}`);
  assert.deepEqual(last, get.body, 'the terminal event carries the GET body');
  assert.equal(last.status, 'completed');
  // Resuming after the terminal event sends nothing more; resuming after `pending` sends only the rest.
  const again = await openSse(`${apiProc.base}/generations/${created.body.id}/events`, { ...auth(), 'last-event-id': '3' });
  await again.ended;
  assert.deepEqual(again.events, []);
  const rest = await openSse(`${apiProc.base}/generations/${created.body.id}/events`, { ...auth(), 'last-event-id': '1' });
  await rest.ended;
  assert.deepEqual(ids(rest.events), [3], 'nothing partial is left once it ended');
});

test('a multi-output run: a forced disconnect mid-run, then Last-Event-ID — no gap, no duplicate, terminal last', async () => {
  // A chain of three outputs and an independent one, each taking ~400 ms.
  const graph = {
    nodes: [
      { id: 'brief', kind: 'text', text: 'Autumn sale' },
      { id: 'p1', kind: 'prompt', output: 'code', prompt: 'one', model: 'local/step-coder' }, { id: 'o1', kind: 'output', label: 'One' },
      { id: 'p2', kind: 'prompt', output: 'code', prompt: 'two', model: 'local/step-coder' }, { id: 'o2', kind: 'output' },
      { id: 'p3', kind: 'prompt', output: 'code', prompt: 'three', model: 'local/step-coder' }, { id: 'o3', kind: 'output' },
      { id: 'p4', kind: 'prompt', output: 'code', prompt: 'four', model: 'local/step-coder' }, { id: 'o4', kind: 'output' },
    ],
    edges: [
      { from: 'brief', to: 'p1' }, { from: 'p1', to: 'o1' }, { from: 'o1', to: 'p2' }, { from: 'p2', to: 'o2' },
      { from: 'o2', to: 'p3' }, { from: 'p3', to: 'o3' }, { from: 'brief', to: 'p4' }, { from: 'p4', to: 'o4' },
    ],
  };
  const wf = await createWorkflow(db.sql, testConfig(), { accountId, workspaceId: null, name: 'stream run', graph });
  const run = await api(apiProc.base, key, `/workflows/${wf.id}/runs`, { method: 'POST' });
  assert.equal(run.status, 202);
  const url = `${apiProc.base}/workflows/${wf.id}/runs/${run.body.id}/events`;

  const first = await openSse(url, auth());
  assert.equal(first.status, 200);
  await first.until((e) => e.event === 'output');
  first.abort();
  await first.ended;
  const lastId = first.events.at(-1)!.id!;
  // Outputs settle while the client is away.
  await new Promise((r) => setTimeout(r, 500));
  const second = await openSse(url, { ...auth(), 'last-event-id': lastId });
  await second.ended;

  // The run's own events (its outputs' streamed text is test/live.stream.test.ts's).
  const all = [...first.events, ...second.events].filter((e) => ['status', 'output', 'progress'].includes(e.event!));
  const seen = ids(all);
  assert.equal(new Set(seen).size, seen.length, `no duplicate: ${seen}`);
  assert.deepEqual(seen, [...seen].sort((a, b) => a - b), `ascending: ${seen}`);
  assert.ok(second.events.length > 0 && first.events.length > 0);
  // No gap: each id is 4 × (output and progress events so far) + the status ordinal so far.
  let pairs = 0;
  let status = 0;
  for (const e of all) {
    if (e.event === 'output' || e.event === 'progress') pairs++;
    else status = JSON.parse(e.data).status === 'pending' ? 1 : JSON.parse(e.data).status === 'running' ? 2 : 3;
    assert.equal(ids([e])[0], pairs * 4 + status, `event ${e.event} ${e.id}`);
  }
  const outputs = all.filter((e) => e.event === 'output').map((e) => JSON.parse(e.data));
  const progress = all.filter((e) => e.event === 'progress').map((e) => JSON.parse(e.data));
  assert.deepEqual(outputs.map((o) => o.outputNodeId).sort(), ['o1', 'o2', 'o3', 'o4']);
  assert.deepEqual(progress, [1, 2, 3, 4].map((completed) => ({ total: 4, completed })));
  // Each output is followed by its progress event.
  all.forEach((e, i) => { if (e.event === 'output') assert.equal(all[i + 1]?.event, 'progress'); });
  const last = all.at(-1)!;
  assert.equal(last.event, 'status');
  const body = JSON.parse(last.data);
  assert.equal(body.status, 'completed');
  const get = await api(apiProc.base, key, `/workflows/${wf.id}/runs/${run.body.id}`);
  assert.deepEqual(body, get.body, 'the terminal event carries the full GET body');
  assert.deepEqual(outputs, get.body.results, 'output events are the results entries, in order');
  assert.equal(outputs.find((o) => o.outputNodeId === 'o1').label, 'One');
});

test(`at most KILN_MAX_STREAMS (${MAX_STREAMS}) open streams per account: 429 rate_limited beyond; closing one frees its slot`, async () => {
  const created = await api(apiProc.base, key, '/generations', { body: { type: 'code', prompt: 'long', model: 'local/stuck-coder' } });
  const url = `${apiProc.base}/generations/${created.body.id}/events`;
  const open = [];
  for (let i = 0; i < MAX_STREAMS; i++) {
    const s = await openSse(url, auth());
    assert.equal(s.status, 200);
    await s.until(() => true);
    open.push(s);
  }
  const over = await openSse(url, auth());
  assert.equal(over.status, 429);
  assert.equal(over.body.error.type, 'rate_limited');
  assert.match(over.headers.get('retry-after')!, /^\d+$/);
  // Another account is not affected.
  const b = await createAccount(db.sql, { tier: 'pro' });
  const bKey = (await createKey(db.sql, b.id)).key;
  const other = await api(apiProc.base, bKey, '/generations', { body: { type: 'code', prompt: 'other', model: 'local/stuck-coder' } });
  const bStream = await openSse(`${apiProc.base}/generations/${other.body.id}/events`, auth(bKey));
  assert.equal(bStream.status, 200);
  bStream.abort();
  // A closed stream gives its slot back.
  open.pop()!.abort();
  let reopened;
  for (let i = 0; i < 50; i++) {
    reopened = await openSse(url, auth());
    if (reopened.status === 200) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(reopened!.status, 200);
  reopened!.abort();
  for (const s of open) s.abort();
});

test('events routes: 400 for a malformed id, 404 for another account\'s job or run, 401 without a key, 403 never (read scope)', async () => {
  assert.equal((await api(apiProc.base, key, '/generations/nope/events')).status, 400);
  assert.equal((await api(apiProc.base, key, `/workflows/${crypto.randomUUID()}/runs/nope/events`)).status, 400);
  assert.equal((await api(apiProc.base, null, `/generations/${crypto.randomUUID()}/events`)).status, 401);
  const b = await createAccount(db.sql, { tier: 'pro' });
  const readOnly = (await createKey(db.sql, b.id, { scopes: ['read'] })).key;
  const created = await api(apiProc.base, key, '/generations', { body: { type: 'code', prompt: 'mine' } });
  const foreign = await api(apiProc.base, readOnly, `/generations/${created.body.id}/events`);
  assert.equal(foreign.status, 404);
  assert.equal(foreign.body.error.type, 'not_found');
  assert.equal((await api(apiProc.base, readOnly, `/workflows/${crypto.randomUUID()}/runs/${crypto.randomUUID()}/events`)).status, 404);
});

test('open streams end when the API process shuts down, and it exits cleanly', async () => {
  const own = await spawnKiln('api', db.url);
  const created = await api(own.base, key, '/generations', { body: { type: 'code', prompt: 'shutdown', model: 'local/stuck-coder' } });
  const s = await openSse(`${own.base}/generations/${created.body.id}/events`, auth());
  await s.until(() => true);
  const t0 = performance.now();
  const code = await own.stop('SIGTERM');
  await s.ended;
  assert.equal(code, 0);
  const ms = performance.now() - t0;
  assert.ok(ms < 3000, `stopped after ${ms.toFixed(0)} ms`);
});
