// The one lease rule, for generations and workflow outputs alike: work leased to a worker whose
// Postgres session still holds its lease lock is never taken over — even before its first
// heartbeat, whatever the stale window — and work whose worker's session ended is unlocked and
// taken over at once. A worker whose lease session is cut aborts its in-flight provider call
// before anyone else may run the job again.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import postgres from 'postgres';
import { chatReply, startOpenAIPeer, type OpenAIPeer, type PeerReply } from './_openai-peer.ts';
import { api, createAccount, createKey, onCleanup, startServer, type TestServer } from './_setup.ts';
import { charges, generationRow, startTestWorker, waitFor } from './_generations.ts';
import { saveWorkflow, startRun } from './_workflows.ts';

const STALE = 30;

let srv: TestServer;
let peer: OpenAIPeer;
const handlers = new Map<string, (n: number) => PeerReply>();
const counts = new Map<string, number>();

before(async () => {
  peer = await startOpenAIPeer();
  onCleanup(() => peer.close());
  peer.script((req) => {
    const m = /\[case:([a-z-]+)\]/.exec(JSON.stringify(req.json));
    const h = m && handlers.get(m[1]!);
    if (!h) return undefined;
    const n = counts.get(m![1]!) ?? 0;
    counts.set(m![1]!, n + 1);
    return h(n);
  });
  srv = await startServer({ config: { workerStaleSeconds: STALE } });
  await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json({
    id: 'peer/coder', name: 'Peer coder', category: 'text', provider: 'openai', upstream: { baseUrl: peer.url, model: 'c' },
    cost: { input_micros_per_token: 1, output_micros_per_token: 2 }, maxOutputTokens: 100, markup: 1,
  })})`;
});

/** A lease held on a connection of its own, as a worker process holds it; it never heartbeats. */
async function holdLease(): Promise<{ id: string; pid: number; drop(): Promise<void> }> {
  const conn = postgres(srv.db.url, { max: 1, idle_timeout: 0, max_lifetime: null, onnotice: () => {} });
  onCleanup(() => conn.end({ timeout: 1 }));
  const [{ id }] = await conn`select kiln.register_worker('test-host', 1) as id`;
  const [{ pid }] = await conn`select pg_backend_pid() as pid`;
  return {
    id,
    pid,
    async drop() {
      await conn.end({ timeout: 1 });
      // The backend exits (and frees the lock) just after the socket closes.
      for (let i = 0; i < 100; i++) {
        const [r] = await srv.db.sql`select count(*)::int as n from pg_stat_activity where pid = ${pid}`;
        if (r.n === 0) return;
        await new Promise((res) => setTimeout(res, 20));
      }
      throw new Error('lease session did not end');
    },
  };
}

/** Locks a job as a graphile-worker pool would (locked_by = the pool id), aged `ageSeconds`. */
async function lockJob(key: string, pool: string, ageSeconds = 0): Promise<number> {
  const [job] = await srv.db.sql`
    update graphile_worker._private_jobs set locked_by = ${pool}, locked_at = now() - make_interval(secs => ${ageSeconds})
    where key = ${key} returning id`;
  assert.ok(job, `job ${key}`);
  return Number(job.id);
}

async function unlockDead(): Promise<string[]> {
  const [{ dead }] = await srv.db.sql`select kiln.unlock_dead_workers(${STALE}::int) as dead`;
  return dead ?? [];
}

async function account() {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  return { accountId: a.id, key: (await createKey(srv.db.sql, a.id)).key };
}

test('a generation leased to a live worker is never taken over, even before its first heartbeat; once its session ends, at once', async () => {
  const { key } = await account();
  const res = await api(srv.base, key, '/generations', { body: { type: 'code', prompt: 'leased' } });
  assert.equal(res.status, 202);
  const id = res.body.id as string;
  const lease = await holdLease();
  const pool = `pool-${lease.id}`;
  await srv.db.sql`select kiln.attach_worker_pool(${lease.id}, ${pool})`;
  const jobId = await lockJob(id, pool);
  const [{ s }] = await srv.db.sql`select kiln.start_generation(${id}::uuid, ${lease.id}, ${jobId}::bigint, ${STALE}::int, 1000, 5) as s`;
  assert.equal(s.outcome, 'run');

  // No heartbeat ever, a lease and a job lock that look ancient: still alive, because its session is.
  await srv.db.sql`update kiln_private.generations set updated_at = now() - interval '1 hour' where id = ${id}`;
  await srv.db.sql`update kiln_private.worker_heartbeats set last_seen = now() - interval '1 hour' where worker_id = ${lease.id}`;
  await lockJob(id, pool, 3600);
  const [{ s: other }] = await srv.db.sql`select kiln.start_generation(${id}::uuid, 'lease-other', ${jobId}::bigint, ${STALE}::int, 1000, 5) as s`;
  assert.equal(other.outcome, 'busy');
  assert.ok(!(await unlockDead()).includes(pool), 'a live worker\'s job is not unlocked');

  // The worker's session ends: the very next sweep unlocks its job and another worker takes over.
  await lease.drop();
  assert.deepEqual(await unlockDead(), [pool]);
  const [job] = await srv.db.sql`select locked_by from graphile_worker.jobs where id = ${jobId}`;
  assert.equal(job.locked_by, null);
  const taker = await holdLease();
  await lockJob(id, `pool-${taker.id}`);
  const [{ s: taken }] = await srv.db.sql`select kiln.start_generation(${id}::uuid, ${taker.id}, ${jobId}::bigint, ${STALE}::int, 1000, 5) as s`;
  assert.equal(taken.outcome, 'run');
  assert.equal((await generationRow(srv.db.sql, id)).worker_id, taker.id);
});

test('a workflow output leased to a live worker is never taken over, even before its first heartbeat; once its session ends, at once', async () => {
  const { accountId, key } = await account();
  const wf = await saveWorkflow(srv, accountId, {
    nodes: [{ id: 'p', kind: 'prompt', output: 'code', prompt: 'leased output' }, { id: 'o', kind: 'output' }],
    edges: [{ from: 'p', to: 'o' }],
  });
  const run = await startRun(srv, key, wf);
  // The output is a generation (origin workflow), run through the same lifecycle.
  const [{ gen }] = await srv.db.sql`select generation_id as gen from kiln_private.workflow_run_outputs where run_id = ${run} and output_node_id = 'o'`;
  const jobKey = gen as string;
  const lease = await holdLease();
  const pool = `pool-${lease.id}`;
  await srv.db.sql`select kiln.attach_worker_pool(${lease.id}, ${pool})`;
  const jobId = await lockJob(jobKey, pool);
  const start = async (worker: string) => {
    const [{ s }] = await srv.db.sql`select kiln.start_generation(${gen}::uuid, ${worker}, ${jobId}::bigint, ${STALE}::int, 1000, 5) as s`;
    return s.outcome as string;
  };
  assert.equal(await start(lease.id), 'run');

  // Right after the start — no heartbeat yet, the lease as young as it gets — another worker is refused.
  await srv.db.sql`update kiln_private.worker_heartbeats set last_seen = now() - interval '1 hour' where worker_id = ${lease.id}`;
  assert.equal(await start('lease-other'), 'busy');
  await lockJob(jobKey, pool, 3600);
  assert.equal(await start('lease-other'), 'busy');
  assert.ok(!(await unlockDead()).includes(pool));

  await lease.drop();
  assert.deepEqual(await unlockDead(), [pool]);
  const taker = await holdLease();
  await lockJob(jobKey, `pool-${taker.id}`);
  assert.equal(await start(taker.id), 'run');
  // The dead lease's execution was cut off: a crash, not an attempt.
  const [row] = await srv.db.sql`select worker_id, attempts, crashes from kiln_private.generations where id = ${gen}`;
  assert.deepEqual([row.worker_id, row.attempts, row.crashes], [taker.id, 1, 1]);
  const [out] = await srv.db.sql`select status from kiln_private.workflow_run_outputs where run_id = ${run} and output_node_id = 'o'`;
  assert.equal(out.status, 'running');
});

test('takeover from a dead session takes about a second: a running worker\'s next sweep unlocks the job (force_unlock_workers) and runs it', async (t) => {
  const { key } = await account();
  const res = await api(srv.base, key, '/generations', { body: { type: 'code', prompt: 'taken over' } });
  assert.equal(res.status, 202);
  const id = res.body.id as string;
  // A worker process that took the job and is about to die: its lease session, its pool's lock.
  const lease = await holdLease();
  const pool = `pool-${lease.id}`;
  await srv.db.sql`select kiln.attach_worker_pool(${lease.id}, ${pool})`;
  const jobId = await lockJob(id, pool);
  const [{ s }] = await srv.db.sql`select kiln.start_generation(${id}::uuid, ${lease.id}, ${jobId}::bigint, ${STALE}::int, 1000, 5) as s`;
  assert.equal(s.outcome, 'run');
  // A live worker with the default sweep (once a second) and stale window (30 s, which must not matter).
  const w = await startTestWorker(srv, { workerStaleSeconds: STALE, workerSweepMs: 1000 });
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal((await generationRow(srv.db.sql, id)).worker_id, lease.id, 'a live session\'s job is left alone');

  await lease.drop();
  const diedAt = Date.now();
  let unlockedAt = 0;
  for (;;) {
    const [job] = await srv.db.sql`select locked_by from graphile_worker.jobs where id = ${jobId}`;
    if (!unlockedAt && job?.locked_by !== pool) unlockedAt = Date.now();
    const row = await generationRow(srv.db.sql, id);
    if (row.status === 'completed') break;
    if (Date.now() - diedAt > 20_000) throw new Error(`not taken over: ${JSON.stringify(row)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  const doneAt = Date.now();
  const row = await generationRow(srv.db.sql, id);
  t.diagnostic(`takeover: unlocked ${unlockedAt - diedAt} ms and completed ${doneAt - diedAt} ms after the worker's session ended (sweep every 1000 ms, stale window ${STALE} s)`);
  assert.ok(unlockedAt - diedAt <= 2000, `unlocked ${unlockedAt - diedAt} ms after the session ended`);
  assert.ok(doneAt - diedAt <= 3000, `completed ${doneAt - diedAt} ms after the session ended`);
  assert.deepEqual([row.worker_id, row.attempts, row.crashes], [w.workerId(), 1, 1]);
  assert.deepEqual((await charges(srv.db.sql, id)).map((c) => c.status), ['settled']);
  await w.stop();
});

test('a worker whose lease session is cut aborts its provider call at once; the job then runs once more and is charged once', async (t) => {
  const { key } = await account();
  // The first call would hang for a minute; the next answers at once.
  handlers.set('cut', (n) => (n === 0 ? { ...chatReply('never delivered'), delayMs: 60_000 } : chatReply('after the cut', { prompt_tokens: 2, completion_tokens: 3 })));
  const w = await startTestWorker(srv, { workerStaleSeconds: STALE });
  const res = await api(srv.base, key, '/generations', { body: { type: 'code', prompt: '[case:cut] go', model: 'peer/coder' } });
  assert.equal(res.status, 202);
  const id = res.body.id as string;
  const calls = () => peer.requests.filter((r) => JSON.stringify(r.json).includes('[case:cut]'));
  for (let i = 0; calls().length === 0; i++) {
    if (i > 400) throw new Error('the provider was never called');
    await new Promise((r) => setTimeout(r, 25));
  }
  const leaseId = w.workerId();
  const [{ ok }] = await srv.db.sql`
    select pg_terminate_backend(backend_pid) as ok from kiln_private.worker_heartbeats where worker_id = ${leaseId}`;
  assert.equal(ok, true);
  const cutAt = Date.now();

  const done = await waitFor(srv, key, id, { timeoutMs: 20_000 });
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.result.code, 'after the cut');
  const [first, second] = calls();
  assert.ok(first!.abortedAt, 'the first provider call was aborted');
  t.diagnostic(`provider call aborted ${first!.abortedAt! - cutAt} ms after the lease session was cut; completed ${Date.now() - cutAt} ms after`);
  assert.ok(first!.abortedAt! - cutAt < 2000, `aborted ${first!.abortedAt! - cutAt} ms after the cut`);
  assert.ok(second && second.receivedAt >= first!.abortedAt!, 'the job never ran on two workers at once');
  assert.equal(calls().length, 2);
  assert.deepEqual((await charges(srv.db.sql, id)).map((c) => [c.status, c.settled]), [['settled', String(2 + 3 * 2)]]);
  assert.notEqual(w.workerId(), leaseId, 'the worker runs under a new lease');
  await w.stop();
});
