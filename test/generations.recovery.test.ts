// Exactly-once charging and crash recovery: duplicate job execution, a stalled ("zombie")
// execution racing a takeover, a live slow worker that must never be unlocked, a worker process
// killed with SIGKILL mid-generation, and generations no job can finish any more.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { after, before, test } from 'node:test';
import { openSse } from './_live.ts';
import { chatReply, chatStream, startOpenAIPeer, type OpenAIPeer, type PeerReply } from './_openai-peer.ts';
import { api, createAccount, createKey, onCleanup, startServer, type TestServer } from './_setup.ts';
import { charges, generationRow, startTestWorker, until, waitFor } from './_generations.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const HEARTBEAT = 1;
const STALE = 3;

let srv: TestServer;
let peer: OpenAIPeer;
const handlers = new Map<string, (n: number) => PeerReply>();
const counts = new Map<string, number>();
const requestsOf = (name: string) => peer.requests.filter((r) => JSON.stringify(r.json).includes(`[case:${name}]`)).length;

before(async () => {
  peer = await startOpenAIPeer();
  peer.script((req) => {
    const m = /\[case:([a-z-]+)\]/.exec(JSON.stringify(req.json));
    const h = m && handlers.get(m[1]!);
    if (!h) return undefined;
    const n = counts.get(m![1]!) ?? 0;
    counts.set(m![1]!, n + 1);
    return h(n);
  });
  srv = await startServer({ config: { workerHeartbeatSeconds: HEARTBEAT, workerStaleSeconds: STALE } });
  for (const m of [
    { id: 'peer/coder', name: 'Peer coder', category: 'text', provider: 'openai', upstream: { baseUrl: peer.url, model: 'c' },
      cost: { input_micros_per_token: 1, output_micros_per_token: 2 }, maxOutputTokens: 100, markup: 1 },
    { id: 'local/slow-sketch', name: 'Slow sketch', category: 'image', provider: 'local', upstream: { delayMs: 800 },
      cost: { micros_per_image: 1000 }, markup: 1 },
  ]) {
    await srv.db.sql`select kiln.upsert_model(${srv.db.sql.json(m)})`;
  }
});

after(async () => {
  await peer?.close();
});

async function newKey() {
  const a = await createAccount(srv.db.sql);
  return { accountId: a.id, key: (await createKey(srv.db.sql, a.id)).key };
}

async function create(key: string, body: Record<string, unknown>): Promise<string> {
  const res = await api(srv.base, key, '/generations', { body });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return res.body.id;
}

test('duplicate jobs for one generation run it once: one image, one settled charge', async () => {
  const { accountId, key } = await newKey();
  const id = await create(key, { type: 'image', prompt: 'duplicated', model: 'local/slow-sketch' });
  // Two more jobs for the same generation, without the job key, as a buggy or replayed enqueue would make.
  await srv.db.sql`select graphile_worker.add_job('generation__run', json_build_object('id', ${id}::uuid))`;
  await srv.db.sql`select graphile_worker.add_job('generation__run', json_build_object('id', ${id}::uuid))`;
  // Two worker pools race for the three jobs.
  const w1 = await startTestWorker(srv);
  const w2 = await startTestWorker(srv);
  const done = await waitFor(srv, key, id);
  assert.equal(done.status, 'completed');
  await until('all jobs finished', async () => {
    const [r] = await srv.db.sql`select count(*)::int as n from graphile_worker._private_jobs where payload->>'id' = ${id}`;
    return r.n === 0;
  }, 30_000);
  const row = await generationRow(srv.db.sql, id);
  assert.equal(row.attempts, 1, 'the provider ran once');
  const ledger = await charges(srv.db.sql, id);
  assert.deepEqual(ledger.map((c) => [c.status, c.settled]), [['settled', '1000']]);
  const [objects] = await srv.db.sql`select count(*)::int as n from kiln_private.objects where owner_id = ${accountId}`;
  assert.equal(objects.n, 1);
  await Promise.all([w1.stop(), w2.stop()]);
});

test('a stalled execution that finishes after a takeover cannot charge again or undo the result', async () => {
  const { key } = await newKey();
  const id = await create(key, { type: 'code', prompt: '[case:zombie] hello', model: 'peer/coder' });
  handlers.set('zombie', () => chatReply('taken over', { prompt_tokens: 10, completion_tokens: 10 }));
  // A "zombie" pool starts the generation and stalls: it never heartbeats again.
  const [job] = await srv.db.sql`select id from graphile_worker._private_jobs where key = ${id}`;
  assert.ok(job);
  const [{ s }] = await srv.db.sql`select kiln.start_generation(${id}, 'pool-zombie', ${job.id}, ${STALE}, 1000, 2) as s`;
  assert.equal(s.outcome, 'run');
  // A healthy worker takes the job over (the zombie holds no lock and no heartbeat) and completes it.
  const w = await startTestWorker(srv);
  const done = await waitFor(srv, key, id);
  assert.equal(done.status, 'completed');
  assert.equal(done.result.code, 'taken over');
  // The zombie wakes up and reports its own outcome: neither applies.
  const [{ c }] = await srv.db.sql`select kiln.complete_generation(${id}, '{"type":"code","code":"zombie","structuredOutput":null}', 5, null) as c`;
  assert.equal(c.applied, false);
  const [{ f }] = await srv.db.sql`select kiln.fail_generation(${id}, 'zombie failed') as f`;
  assert.equal(f.applied, false);
  const after = await api(srv.base, key, `/generations/${id}`);
  assert.equal(after.body.result.code, 'taken over');
  assert.deepEqual((await charges(srv.db.sql, id)).map((x) => [x.status, x.settled]), [['settled', '30']]);
  // The zombie's execution was cut off and taken over: a crash, not an attempt.
  const row = await generationRow(srv.db.sql, id);
  assert.deepEqual([row.attempts, row.crashes], [1, 1]);
  await w.stop();
});

test('concurrent settlements of one generation: exactly one applies', async () => {
  const { key } = await newKey();
  const id = await create(key, { type: 'code', prompt: 'race' });
  const results = await Promise.all(
    [7, 8, 9, 10].map(async (cost) => {
      const [{ r }] = await srv.db.sql`select kiln.complete_generation(${id}, ${srv.db.sql.json({ type: 'code', code: String(cost), structuredOutput: null })}, ${cost}, null) as r`;
      return r.applied as boolean;
    }),
  );
  assert.equal(results.filter(Boolean).length, 1);
  const ledger = await charges(srv.db.sql, id);
  assert.equal(ledger.length, 1);
  assert.equal(ledger[0].status, 'settled');
  const body = (await api(srv.base, key, `/generations/${id}`)).body;
  assert.equal(String(body.result.costMicros), ledger[0].settled);
  assert.equal(body.result.code, ledger[0].settled);
  // Settling can never exceed the reservation.
  const id2 = await create(key, { type: 'image', prompt: 'cap' });
  await srv.db.sql`select kiln.complete_generation(${id2}, '{"type":"image","path":null,"mediaType":"image/png","aspectRatio":"1:1"}', 999999999, null)`;
  assert.deepEqual((await charges(srv.db.sql, id2)).map((x) => x.settled), ['1000']);
});

test('a live worker\'s job is never unlocked, however slow the provider: the call runs once', async () => {
  const { key } = await newKey();
  handlers.set('slow-live', () => ({ ...chatReply('worth the wait'), delayMs: (STALE + 3) * 1000 }));
  const w1 = await startTestWorker(srv);
  const id = await create(key, { type: 'code', prompt: '[case:slow-live] take your time', model: 'peer/coder' });
  // Another worker sweeps for dead workers all along.
  const w2 = await startTestWorker(srv);
  const done = await waitFor(srv, key, id, { timeoutMs: 20_000 });
  assert.equal(done.status, 'completed');
  assert.equal(requestsOf('slow-live'), 1);
  assert.equal((await generationRow(srv.db.sql, id)).attempts, 1);
  assert.deepEqual((await charges(srv.db.sql, id)).map((x) => x.status), ['settled']);
  await Promise.all([w1.stop(), w2.stop()]);
});

/** `kiln worker` as its own process, with the default heartbeat and stale window (5 s, 30 s). */
function spawnWorker(): Promise<ChildProcess> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: srv.db.url, KILN_LOG: 'silent' };
  delete env.KILN_WORKER_HEARTBEAT_SECONDS;
  delete env.KILN_WORKER_STALE_SECONDS;
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'kiln.js'), 'worker'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  onCleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    }
  });
  return new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: child.stdout! });
    rl.on('line', (l) => {
      if (/worker started/i.test(l)) resolve(child);
    });
    child.once('exit', (code, sig) => reject(new Error(`worker exited early (${code ?? sig})`)));
  });
}

test('a worker killed with SIGKILL mid-generation: a restarted worker finishes it within 5 s (stale window 30 s), charged once', async (t) => {
  const { key } = await newKey();
  // The first call hangs (the worker dies during it); the retry answers at once.
  handlers.set('sigkill', (n) => (n === 0 ? { ...chatReply('never delivered'), delayMs: 120_000 } : chatReply('survived', { prompt_tokens: 3, completion_tokens: 4 })));
  const id = await create(key, { type: 'code', prompt: '[case:sigkill] please', model: 'peer/coder' });

  const first = await spawnWorker();
  await until('generation processing in the first worker', async () => (await generationRow(srv.db.sql, id)).status === 'processing' && requestsOf('sigkill') === 1, 30_000);
  first.kill('SIGKILL');
  await new Promise((r) => first.once('exit', r));

  // The dead worker's lease died with its session: no heartbeat window to wait out.
  const spawnedAt = Date.now();
  const second = await spawnWorker();
  const restartedAt = Date.now();
  const done = await waitFor(srv, key, id, { timeoutMs: 60_000 });
  const recoveredMs = Date.now() - restartedAt;
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.result.code, 'survived');
  t.diagnostic(`completed ${recoveredMs} ms after the restarted worker was up (${restartedAt - spawnedAt} ms to start it; stale window 30 s)`);
  assert.ok(recoveredMs <= 5_000, `completed ${recoveredMs} ms after the restart`);
  assert.equal(requestsOf('sigkill'), 2);
  // The killed execution is a crash, not an attempt.
  const row = await generationRow(srv.db.sql, id);
  assert.deepEqual([row.attempts, row.crashes], [1, 1]);
  const ledger = await charges(srv.db.sql, id);
  assert.deepEqual(ledger.map((c) => [c.status, c.settled]), [['settled', String(3 + 4 * 2)]]);

  second.kill('SIGTERM');
  const code = await new Promise((r) => second.once('exit', (c) => r(c)));
  assert.equal(code, 0, 'a signalled worker shuts down cleanly');
  // The killed worker's heartbeat was swept; the stopped one retired its own.
  const [hb] = await srv.db.sql`select count(*)::int as n from kiln_private.worker_heartbeats`;
  assert.equal(hb.n, 0);
});

test('a worker killed with SIGKILL mid-stream: the stream shows reset, the new execution\'s deltas make the final text, charged once', async () => {
  const { key } = await newKey();
  // The first call writes two pieces, then stays silent (its worker dies); the retry streams it all.
  handlers.set('stream-kill', (n) => (n === 0
    ? chatStream(['first try ', 'is cut '], null, { chunkMs: 20, noEnd: true, hold: true })
    : chatStream(['second ', 'try ', 'is whole\n'], { prompt_tokens: 3, completion_tokens: 4 }, { chunkMs: 20 })));
  const id = await create(key, { type: 'code', prompt: '[case:stream-kill] please', model: 'peer/coder' });
  const first = await spawnWorker();
  const s = await openSse(`${srv.base}/generations/${id}/events`, { authorization: `Bearer ${key}` });
  await s.until((e) => e.event === 'delta' && s.events.filter((x) => x.event === 'delta').map((x) => JSON.parse(x.data).text).join('') === 'first try is cut ', 30_000);
  first.kill('SIGKILL');
  await new Promise((r) => first.once('exit', r));
  const second = await spawnWorker();
  await s.ended;
  second.kill('SIGTERM');
  await new Promise((r) => second.once('exit', r));
  const events = s.events.map((e) => e.event);
  const reset = events.indexOf('reset');
  assert.ok(reset > 0, JSON.stringify(events));
  assert.deepEqual(JSON.parse(s.events[reset]!.data), { attempt: 2 });
  const after = s.events.slice(reset).filter((e) => e.event === 'delta').map((e) => JSON.parse(e.data));
  assert.equal(after[0]!.offset, 0, 'offsets start again after a reset');
  assert.equal(after.map((d) => d.text).join(''), 'second try is whole\n');
  const end = JSON.parse(s.events.at(-1)!.data);
  assert.equal(end.status, 'completed');
  assert.equal(end.result.code, 'second try is whole');
  assert.deepEqual((await charges(srv.db.sql, id)).map((c) => [c.status, c.settled]), [['settled', String(3 * 1 + 4 * 2)]]);
});

test('a generation no job can finish any more is failed by the sweep and its reservation released', async () => {
  const { key } = await newKey();
  const id = await create(key, { type: 'image', prompt: 'orphan' });
  // The job disappears (e.g. a worker died during the final attempt, or an operator removed it).
  await srv.db.sql`delete from graphile_worker._private_jobs where key = ${id}`;
  await srv.db.sql`update kiln_private.generations set updated_at = now() - interval '1 minute' where id = ${id}`;
  const [{ r }] = await srv.db.sql`select kiln.sweep_workers(${STALE}) as r`;
  assert.ok(r.failed_generations >= 1);
  const body = (await api(srv.base, key, `/generations/${id}`)).body;
  assert.equal(body.status, 'failed');
  assert.match(body.error, /^no worker can finish this generation: its job left the queue \(removed, or out of retries\)\. Nothing was charged; create the generation again\.$/);
  assert.deepEqual((await charges(srv.db.sql, id)).map((x) => x.status), ['released']);

  // A generation whose job is merely waiting (slot wait, retry backoff) is left alone.
  const waiting = await create(key, { type: 'image', prompt: 'still queued' });
  await srv.db.sql`update kiln_private.generations set updated_at = now() - interval '1 minute' where id = ${waiting}`;
  await srv.db.sql`select kiln.sweep_workers(${STALE})`;
  assert.equal((await generationRow(srv.db.sql, waiting)).status, 'pending');
});
