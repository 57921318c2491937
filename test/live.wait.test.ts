// `Prefer: wait=N` across processes: `kiln api` and `kiln worker` run as separate processes on the
// test database, so every wake-up travels through Postgres NOTIFY to the API's one LISTEN
// connection. Plus the lost-notification case: the listening connection dies as a job settles.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { generationStats } from '../src/generations/service.ts';
import { hubOf } from '../src/live/hub.ts';
import { createWorkflow } from '../src/workflows/authoring.ts';
import { spawnKiln, type Spawned } from './_live.ts';
import { api, createAccount, createKey, createTestDb, startServer, testConfig, type TestDb } from './_setup.ts';

let db: TestDb;
let apiProc: Spawned;
let key: string;
let accountId: string;

const SLOW_MS = 2500;

before(async () => {
  db = await createTestDb();
  for (const m of [
    { id: 'local/slow-coder', name: 'Slow coder', category: 'text', provider: 'local', upstream: { delayMs: SLOW_MS },
      cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 1 },
    { id: 'local/stuck-coder', name: 'Stuck coder', category: 'text', provider: 'local', upstream: { delayMs: 60_000 },
      cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 1 },
  ]) {
    await db.sql`select kiln.upsert_model(${db.sql.json(m)})`;
  }
  const a = await createAccount(db.sql, { tier: 'enterprise' });
  accountId = a.id;
  key = (await createKey(db.sql, a.id)).key;
  [apiProc] = await Promise.all([spawnKiln('api', db.url), spawnKiln('worker', db.url)]);
});

async function finishedAt(id: string): Promise<number> {
  const [g] = await db.sql`select extract(epoch from finished_at) * 1000 as ms from kiln_private.generations where id = ${id}`;
  return Number(g!.ms);
}

test('POST with Prefer: wait on a fast local model: 200 with the status body and preference-applied', async () => {
  const res = await api(apiProc.base, key, '/generations', { body: { type: 'code', prompt: 'wait for me' }, headers: { prefer: 'wait=10' } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.headers.get('preference-applied'), 'wait=10');
  assert.equal(res.body.status, 'completed');
  assert.match(res.body.result.code, /wait for me/);
  assert.match(res.headers.get('location')!, new RegExp(`/generations/${res.body.id}$`));
  const get = await api(apiProc.base, key, `/generations/${res.body.id}`);
  assert.deepEqual(res.body, get.body, 'the same body as GET /generations/{id}');
});

test('POST with Prefer: wait=1 on a slow model: the usual 202 after about 1 s, never a 504', async () => {
  const t0 = performance.now();
  const res = await api(apiProc.base, key, '/generations', { body: { type: 'code', prompt: 'slow', model: 'local/slow-coder' }, headers: { prefer: 'wait=1' } });
  const ms = performance.now() - t0;
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.deepEqual(Object.keys(res.body).sort(), ['id', 'status']);
  assert.equal(res.body.status, 'pending');
  assert.equal(res.headers.get('preference-applied'), 'wait=1');
  assert.ok(ms >= 950 && ms < SLOW_MS, `answered after ${ms.toFixed(0)} ms`);
});

test('GET with Prefer: wait=20 answers as soon as the job settles, far before 20 s', async (t) => {
  const created = await api(apiProc.base, key, '/generations', { body: { type: 'code', prompt: 'slow get', model: 'local/slow-coder' } });
  assert.equal(created.status, 202);
  const t0 = performance.now();
  const res = await api(apiProc.base, key, `/generations/${created.body.id}`, { headers: { prefer: 'wait=20' } });
  const receivedAt = Date.now();
  const ms = performance.now() - t0;
  assert.equal(res.status, 200);
  assert.equal(res.body.status, 'completed');
  assert.equal(res.headers.get('preference-applied'), 'wait=20');
  const lag = receivedAt - (await finishedAt(created.body.id));
  t.diagnostic(`answered after ${ms.toFixed(0)} ms (job ~${SLOW_MS} ms); ${lag.toFixed(1)} ms after the settling transaction began`);
  assert.ok(ms < SLOW_MS + 3000, `answered after ${ms.toFixed(0)} ms`);
  assert.ok(lag < 1000, `answered ${lag} ms after settlement`);
});

test('GET with Prefer: wait=1 on a job still running: after about 1 s, its current state', async () => {
  const created = await api(apiProc.base, key, '/generations', { body: { type: 'code', prompt: 'stuck', model: 'local/stuck-coder' } });
  const t0 = performance.now();
  const res = await api(apiProc.base, key, `/generations/${created.body.id}`, { headers: { prefer: 'wait=1' } });
  const ms = performance.now() - t0;
  assert.equal(res.status, 200);
  assert.ok(['pending', 'processing'].includes(res.body.status), res.body.status);
  assert.equal(res.body.result, null);
  assert.ok(ms >= 950 && ms < 3000, `answered after ${ms.toFixed(0)} ms`);
});

test('a wait outside 1–60 or malformed is ignored; wait among other preferences is honoured', async () => {
  for (const prefer of ['wait=0', 'wait=61', 'wait=abc', 'wait', 'wait=1.5', 'respond-async']) {
    const t0 = performance.now();
    const res = await api(apiProc.base, key, '/generations', { body: { type: 'code', prompt: 'ignored', model: 'local/slow-coder' }, headers: { prefer } });
    assert.equal(res.status, 202, prefer);
    assert.equal(res.headers.get('preference-applied'), null, prefer);
    assert.ok(performance.now() - t0 < 900, `${prefer}: answered at once`);
  }
  const res = await api(apiProc.base, key, '/generations', { body: { type: 'code', prompt: 'among others' }, headers: { prefer: 'respond-async, return=minimal; x=1, WAIT="15", wait=2' } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('preference-applied'), 'wait=15', 'the first wait counts');
});

test('the key and its rate limits are checked once per waiting request, not per wake-up', async () => {
  // A key limited to 3 requests a minute: POST, a waiting GET woken twice (processing, completed), one more GET.
  const limited = (await createKey(db.sql, accountId, { rpm: 3 })).key;
  const created = await api(apiProc.base, limited, '/generations', { body: { type: 'code', prompt: 'once', model: 'local/slow-coder' } });
  assert.equal(created.status, 202);
  const waited = await api(apiProc.base, limited, `/generations/${created.body.id}`, { headers: { prefer: 'wait=20' } });
  assert.equal(waited.body.status, 'completed');
  assert.equal((await api(apiProc.base, limited, `/generations/${created.body.id}`)).status, 200);
  const denied = await api(apiProc.base, limited, `/generations/${created.body.id}`);
  assert.equal(denied.status, 429);
  assert.equal(denied.body.error.type, 'rate_limited');
});

test('GET a run with Prefer: wait answers once the run is completed', async () => {
  const graph = {
    nodes: [
      { id: 'p1', kind: 'prompt', output: 'code', prompt: 'first', model: 'local/slow-coder' },
      { id: 'o1', kind: 'output' },
      { id: 'p2', kind: 'prompt', output: 'code', prompt: 'second', model: 'local/coder' },
      { id: 'o2', kind: 'output' },
    ],
    edges: [{ from: 'p1', to: 'o1' }, { from: 'o1', to: 'p2' }, { from: 'p2', to: 'o2' }],
  };
  const wf = await createWorkflow(db.sql, testConfig(), { accountId, workspaceId: null, name: 'wait run', graph });
  const run = await api(apiProc.base, key, `/workflows/${wf.id}/runs`, { method: 'POST' });
  assert.equal(run.status, 202);
  const t0 = performance.now();
  const res = await api(apiProc.base, key, `/workflows/${wf.id}/runs/${run.body.id}`, { headers: { prefer: 'wait=30' } });
  const ms = performance.now() - t0;
  assert.equal(res.status, 200);
  assert.equal(res.body.status, 'completed', JSON.stringify(res.body));
  assert.equal(res.body.results.length, 2);
  assert.equal(res.headers.get('preference-applied'), 'wait=30');
  assert.ok(ms < SLOW_MS + 4000, `answered after ${ms.toFixed(0)} ms`);
  // Without a wait, a running run answers at once.
  const run2 = await api(apiProc.base, key, `/workflows/${wf.id}/runs`, { method: 'POST' });
  const quick = await api(apiProc.base, key, `/workflows/${wf.id}/runs/${run2.body.id}`, { headers: { prefer: 'wait=1' } });
  assert.ok(['pending', 'running'].includes(quick.body.status), quick.body.status);
});

test('a notification lost while the listening connection reconnects does not leave a waiter asleep', async () => {
  // In-process API (its hub is inspectable), no worker: the test settles the job itself.
  const srv = await startServer();
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const k = (await createKey(srv.db.sql, a.id)).key;
  const created = await api(srv.base, k, '/generations', { body: { type: 'code', prompt: 'lost' } });
  const hub = hubOf(srv.ctx);
  await hub.ready();
  const t0 = performance.now();
  const waiting = api(srv.base, k, `/generations/${created.body.id}`, { headers: { prefer: 'wait=20' } });
  while (hub.size === 0) await new Promise((r) => setTimeout(r, 10));
  const listens = hub.stats.listens;
  // The job settles in the same transaction that kills the listening connection: its NOTIFY is
  // sent at commit, while that connection is gone.
  await srv.db.sql.begin(async (tx) => {
    await tx`select kiln.complete_generation(${created.body.id}, ${tx.json({ type: 'code', code: 'settled', structuredOutput: null })}, 1, null)`;
    await tx`select pg_terminate_backend(pid) from pg_stat_activity
             where datname = current_database() and pid <> pg_backend_pid() and query ilike 'listen%'`;
  });
  const res = await waiting;
  const ms = performance.now() - t0;
  assert.equal(res.body.status, 'completed');
  assert.equal(res.body.result.code, 'settled');
  assert.ok(hub.stats.listens > listens, 'the listener reconnected');
  assert.ok(ms < 5000, `answered after ${ms.toFixed(0)} ms of a 20 s wait`);
});

test('a status notice carries the body: waiters and streams answer without reading the generation again; a large result is read', async () => {
  const srv = await startServer();
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const k = (await createKey(srv.db.sql, a.id)).key;
  const hub = hubOf(srv.ctx);
  await hub.ready();
  for (const [label, code] of [['small', 'settled small'], ['large', 'x'.repeat(20_000)]] as const) {
    const created = await api(srv.base, k, '/generations', { body: { type: 'code', prompt: label } });
    const id = created.body.id as string;
    const size = hub.size;
    const waiting = api(srv.base, k, `/generations/${id}`, { headers: { prefer: 'wait=20' } });
    // The stream's first event (pending) is sent after its first read: wait for it.
    let text = '';
    let first!: () => void;
    const opened = new Promise<void>((r) => (first = r));
    const stream = fetch(`${srv.base}/generations/${id}/events`, { headers: { authorization: `Bearer ${k}` } }).then(async (r) => {
      const decoder = new TextDecoder();
      for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
        text += decoder.decode(chunk, { stream: true });
        if (text.includes('id: 1\n')) first();
      }
      return text;
    });
    await opened;
    while (hub.size < size + 2) await new Promise((r) => setTimeout(r, 10));
    const reads = generationStats.reads;
    await srv.db.sql`update kiln_private.generations set status = 'processing', started_at = now() where id = ${id}`;
    while (!text.includes('id: 2\n')) await new Promise((r) => setTimeout(r, 10));
    await srv.db.sql`select kiln.complete_generation(${id}, ${srv.db.sql.json({ type: 'code', code, structuredOutput: null })}, 1, null)`;
    const [res, events] = await Promise.all([waiting, stream]);
    assert.match(events, /id: 2\nevent: status\ndata: \{[^\n]*"status":"processing"/);
    assert.equal(res.body.status, 'completed');
    assert.equal(res.body.result.code, code);
    const terminal = events.split('\n\n').find((e) => e.includes('id: 3'))!;
    assert.equal(JSON.parse(terminal.split('\n').find((l) => l.startsWith('data: '))!.slice(6)).result.code, code);
    // The waiter and the stream: no read for a body that fits in the notice, one each otherwise.
    assert.equal(generationStats.reads - reads, label === 'small' ? 0 : 2, label);
    const get = await api(srv.base, k, `/generations/${id}`);
    assert.deepEqual(res.body, get.body, 'the carried body is the GET body');
  }
});

test('a notice without a body after one with a body is read, not answered from the older body', async () => {
  // Both status changes commit together, so their notices reach the stream back to back before
  // it wakes: the processing one carries its body, the completion (a 20 KB result) does not.
  const srv = await startServer();
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const k = (await createKey(srv.db.sql, a.id)).key;
  const hub = hubOf(srv.ctx);
  await hub.ready();
  const created = await api(srv.base, k, '/generations', { body: { type: 'code', prompt: 'back to back' } });
  const id = created.body.id as string;
  let text = '';
  let first!: () => void;
  const opened = new Promise<void>((r) => (first = r));
  const stream = fetch(`${srv.base}/generations/${id}/events`, { headers: { authorization: `Bearer ${k}` }, signal: AbortSignal.timeout(8000) }).then(async (r) => {
    const decoder = new TextDecoder();
    for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      if (text.includes('id: 1\n')) first();
    }
    return text;
  });
  await opened;
  const code = 'y'.repeat(20_000);
  await srv.db.sql.begin(async (tx) => {
    await tx`update kiln_private.generations set status = 'processing', started_at = now() where id = ${id}`;
    await tx`select kiln.complete_generation(${id}, ${tx.json({ type: 'code', code, structuredOutput: null })}, 1, null)`;
  });
  const events = await stream;
  const terminal = events.split('\n\n').find((e) => e.includes('id: 3'));
  assert.ok(terminal, `the stream ended with its terminal event: ${events.slice(0, 300)}`);
  assert.equal(JSON.parse(terminal.split('\n').find((l) => l.startsWith('data: '))!.slice(6)).result.code, code);
});
