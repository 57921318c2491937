// Lanes under a noisy neighbour (docs/api.md, "Batches"), with real processes: `kiln api` and
// `kiln worker` (8 worker slots, 2 of them never taken by batch lines) against a loopback OpenAI
// peer that takes 300 ms a call. Account A (64 parallel slots: its groups of lines alone would
// fill every worker slot) starts a 3,000-line batch; then account B starts a 10-line batch and account C sends
// interactive POST /generations. C's generations reach `processing` within 1 s of being accepted
// (interactive work is queued at priority 0, ahead of every batch line), and B's batch completes
// while A has completed less than a third of its lines (lines take turns by billing scope).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startOpenAIPeer, type OpenAIPeer } from './_openai-peer.ts';
import { openSse, spawnKiln, type Spawned } from './_live.ts';
import { until } from './_generations.ts';
import { api, createAccount, createKey, createTestDb, type TestDb } from './_setup.ts';
import { chatAfter, peerModels } from './_workflows.ts';

const WORKER_SLOTS = 8;
const A_LINES = 3000;
const B_LINES = 10;
const C_REQUESTS = 12;

let db: TestDb;
let peer: OpenAIPeer;
let apiProc: Spawned;

before(async () => {
  peer = await startOpenAIPeer();
  peer.script(() => chatAfter(300, 'export const x = 1;'));
  db = await createTestDb();
  await peerModels(db.sql, peer);
  [apiProc] = await Promise.all([
    spawnKiln('api', db.url),
    spawnKiln('worker', db.url, { KILN_WORKER_CONCURRENCY: String(WORKER_SLOTS) }),
  ]);
});

after(async () => {
  await peer?.close();
});

async function account(slots?: number) {
  const a = await createAccount(db.sql, { tier: 'pro', budgetMicros: null });
  if (slots) await db.sql`update kiln_private.accounts set parallel_slots = ${slots} where id = ${a.id}`;
  return { id: a.id, key: (await createKey(db.sql, a.id)).key };
}

function batchBody(prefix: string, n: number): string {
  let out = '';
  for (let i = 1; i <= n; i++) {
    out += `${JSON.stringify({ custom_id: `${prefix}-${i}`, method: 'POST', url: '/api/v1/generations', body: { type: 'code', prompt: `${prefix} line ${i}`, model: 'peer/coder' } })}\n`;
  }
  return out;
}

async function postBatch(key: string, body: string) {
  const res = await fetch(`${apiProc.base}/batches`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/jsonl' }, body });
  const json = await res.json();
  assert.equal(res.status, 202, JSON.stringify(json));
  return json as { id: string };
}

const processingOf = async (accountId: string) =>
  (await db.sql`select count(*)::int as n from kiln_private.generations where account_id = ${accountId} and status = 'processing'`)[0]!.n as number;

test(`noisy neighbour: a ${A_LINES}-line batch never holds up another account's ${B_LINES}-line batch or interactive generations`, async (t) => {
  const a = await account(8 * WORKER_SLOTS);
  const b = await account();
  const c = await account();

  const aBatch = await postBatch(a.key, batchBody('a', A_LINES));
  // A alone has many lines running (8 times the worker's slots are its parallel slots: its lines
  // run in groups of 10, a batch__run job each), with the rest of its lines waiting their turn.
  await until('A runs lines in groups', async () => (await processingOf(a.id)) >= 2 * WORKER_SLOTS, 30_000, 20);
  const [{ left }] = await db.sql`select count(*)::int as left from kiln_private.generations where batch_id = ${aBatch.id} and status = 'pending'`;
  assert.ok(left >= A_LINES - 200, `A has lines waiting behind the busy slots (${left})`);
  // Batch jobs never take the worker's interactive slots (KILN_WORKER_INTERACTIVE_SLOTS, a quarter
  // of 8 by default), though A alone has groups enough for more: sampled while both batches run.
  let batchJobsMax = 0;
  const sampling = setInterval(() => {
    // Jobs running lines (a job's row stays locked a moment after its task returned).
    db.sql`select count(distinct job_id)::int as n from kiln_private.generations where batch_id is not null and status = 'processing'`
      .then(([r]) => { batchJobsMax = Math.max(batchJobsMax, r!.n as number); }, () => {});
  }, 20);

  // B's batch, and its stream's terminal event: when it completed, as the client sees it.
  const bStarted = performance.now();
  const bBatch = await postBatch(b.key, batchBody('b', B_LINES));
  const bEvents = await openSse(`${apiProc.base}/batches/${bBatch.id}/events`, { authorization: `Bearer ${b.key}` });
  assert.equal(bEvents.status, 200);
  let aAtBDone: { completed: number; failed: number; canceled: number } | null = null;
  let bSeconds = 0;
  const bDone = bEvents.until((e) => e.event === 'status', 50_000).then(async (e) => {
    bSeconds = (performance.now() - bStarted) / 1000;
    aAtBDone = (await api(apiProc.base, a.key, `/batches/${aBatch.id}`)).body.requestCounts;
    return JSON.parse(e.data);
  });

  // C's interactive generations, one every 250 ms while both batches run: accepted → processing,
  // as C sees it (the 202, then the `processing` status event of the generation's stream).
  const latencies: number[] = [];
  const ids: string[] = [];
  for (let i = 0; i < C_REQUESTS; i++) {
    const res = await api(apiProc.base, c.key, '/generations', { body: { type: 'code', prompt: `interactive ${i}`, model: 'peer/coder' } });
    const accepted = performance.now();
    assert.equal(res.status, 202, JSON.stringify(res.body));
    ids.push(res.body.id);
    const s = await openSse(`${apiProc.base}/generations/${res.body.id}/events`, { authorization: `Bearer ${c.key}` });
    // Event id 2 is `processing` (a later status, if the stream opened after it, counts as reached).
    await s.until((e) => e.event === 'status' && Number(e.id) >= 2, 10_000);
    latencies.push(performance.now() - accepted);
    s.abort();
    await new Promise((r) => setTimeout(r, 250));
  }
  // The same on the database's clock: created → started.
  const rows = await db.sql`select extract(epoch from started_at - created_at) * 1000 as ms from kiln_private.generations where id = any(${ids}::uuid[])`;
  const dbMs = rows.map((r) => Number(r.ms));
  t.diagnostic(`C accepted → processing (client): ${latencies.map((l) => l.toFixed(0)).join(', ')} ms; created → started (database): max ${Math.max(...dbMs).toFixed(0)} ms`);
  assert.ok(latencies.every((l) => l < 1000), `every interactive generation processing within 1 s: ${latencies.map((l) => l.toFixed(0)).join(', ')} ms`);
  assert.ok(dbMs.every((ms) => ms < 1000), `created → started within 1 s on the database clock: ${dbMs.map((x) => x.toFixed(0)).join(', ')}`);

  const bBody = await bDone;
  clearInterval(sampling);
  t.diagnostic(`batch__run jobs running at once: at most ${batchJobsMax}`);
  assert.ok(batchJobsMax >= 5 && batchJobsMax <= WORKER_SLOTS - WORKER_SLOTS / 4, `batch jobs ran on at most 6 of 8 worker slots (${batchJobsMax})`);
  assert.equal(bBody.status, 'completed');
  assert.deepEqual(bBody.requestCounts, { total: B_LINES, completed: B_LINES, failed: 0, canceled: 0 });
  const aCounts = aAtBDone!;
  const aEnded = aCounts.completed + aCounts.failed + aCounts.canceled;
  t.diagnostic(`B completed in ${bSeconds.toFixed(1)} s, when A had ended ${aEnded} of ${A_LINES} lines`);
  assert.ok(aEnded < A_LINES / 3, `B completed while A had ended less than a third of its lines (${aEnded})`);
  assert.equal(aCounts.failed, 0);

  // C's generations all completed; A still runs: cancel it, and it ends canceled with nothing
  // not started charged.
  await until('C\'s generations completed', async () => {
    const [{ n }] = await db.sql`select count(*)::int as n from kiln_private.generations where id = any(${ids}::uuid[]) and status = 'completed'`;
    return n === C_REQUESTS;
  }, 20_000, 100);
  const canceled = await api(apiProc.base, a.key, `/batches/${aBatch.id}/cancel`, { method: 'POST' });
  assert.equal(canceled.status, 200, JSON.stringify(canceled.body));
  const aFinal = await until('A canceled', async () => {
    const body = (await api(apiProc.base, a.key, `/batches/${aBatch.id}`)).body;
    return body.status === 'canceled' ? body : null;
  }, 30_000, 200);
  const ac = aFinal.requestCounts;
  assert.equal(ac.completed + ac.failed + ac.canceled, A_LINES);
  assert.ok(ac.canceled > A_LINES / 2, JSON.stringify(ac));
  const [{ settled }] = await db.sql`select count(*)::int as settled from kiln_private.charges ch join kiln_private.generations g on g.id = ch.generation_id
    where g.batch_id = ${aBatch.id} and ch.status = 'settled'`;
  assert.equal(settled, ac.completed, 'only A\'s completed lines are charged');
});
