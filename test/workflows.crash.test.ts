// A worker process killed (SIGKILL) in the middle of a run: another worker takes its outputs over
// within seconds (the dead worker's lease ended with its session; no heartbeat window to wait
// out), the run still completes, and no output is charged twice.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { before, test } from 'node:test';
import { startTestWorker, until } from './_generations.ts';
import { startOpenAIPeer, type OpenAIPeer } from './_openai-peer.ts';
import { createAccount, createKey, onCleanup, startServer, type TestServer } from './_setup.ts';
import { chatAfter, peerModels, runCharges, saveWorkflow, startRun, userText, waitRun } from './_workflows.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');

let srv: TestServer;
let peer: OpenAIPeer;
const calls = new Map<string, number>();

before(async () => {
  peer = await startOpenAIPeer();
  onCleanup(() => peer.close());
  peer.script((req) => {
    const step = /STEP<([^>]+)>/.exec(userText(req))?.[1] ?? 'unknown';
    const n = (calls.get(step) ?? 0) + 1;
    calls.set(step, n);
    // B's first execution never gets an answer: its worker is killed while it waits.
    if (step === 'B' && n === 1) return { hang: true };
    return chatAfter(20, `result-of-${step}`);
  });
  srv = await startServer();
  await peerModels(srv.db.sql, peer);
});

/** `kiln worker` as a separate process on the test database; resolves once it is consuming jobs. */
async function childWorker(): Promise<ChildProcess> {
  // The default heartbeat and stale window (5 s, 30 s).
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: srv.db.url, KILN_LOG: 'silent', KILN_PUBLIC_URL: srv.origin };
  delete env.KILN_WORKER_HEARTBEAT_SECONDS;
  delete env.KILN_WORKER_STALE_SECONDS;
  const child = spawn(process.execPath, [BIN, 'worker'], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  onCleanup(async () => { if (child.exitCode === null) child.kill('SIGKILL'); });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d) => { if (String(d).includes('worker started')) resolve(); });
    child.once('exit', (code) => reject(new Error(`worker exited early (${code})`)));
  });
  return child;
}


test('a worker killed mid-run: the run completes on another worker within seconds and every output is charged once', async (t) => {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const { key } = await createKey(srv.db.sql, a.id);
  const p = (id: string) => ({ id, kind: 'prompt', output: 'code', model: 'peer/coder', prompt: `STEP<${id}>` });
  const o = (id: string) => ({ id, kind: 'output' });
  const wf = await saveWorkflow(srv, a.id, {
    nodes: [p('A'), o('oA'), p('B'), o('oB'), p('C'), o('oC'), p('D'), o('oD')],
    edges: [{ from: 'A', to: 'oA' }, { from: 'oA', to: 'B' }, { from: 'B', to: 'oB' }, { from: 'oB', to: 'D' }, { from: 'D', to: 'oD' }, { from: 'C', to: 'oC' }],
  });

  const child = await childWorker();
  const run = await startRun(srv, key, wf);
  await until('B to reach the provider', () => calls.get('B') === 1);
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));

  const mid = new Map((await runCharges(srv.db.sql, run)).map((c) => [c.node_id, c.status]));
  assert.equal(mid.get('oA'), 'settled');
  assert.equal(mid.get('oB'), 'reserved', 'B was in flight when its worker died');
  assert.equal(mid.has('oD'), false);

  const restartedAt = Date.now();
  await startTestWorker(srv, { workerStaleSeconds: 30, workerHeartbeatSeconds: 5 });
  const done = await waitRun(srv, key, wf, run, { timeoutMs: 30_000 });
  const recoveredMs = Date.now() - restartedAt;
  t.diagnostic(`run completed ${recoveredMs} ms after the restart (stale window 30 s)`);
  assert.ok(recoveredMs <= 5_000, `run completed ${recoveredMs} ms after the restart`);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.deepEqual(done.results.map((r: any) => r.status), ['completed', 'completed', 'completed', 'completed']);
  assert.equal(calls.get('B'), 2, 'B ran again after the crash');
  assert.equal(calls.get('A'), 1);
  assert.equal(calls.get('D'), 1);

  const ledger = await runCharges(srv.db.sql, run);
  assert.deepEqual(ledger.map((c) => [c.node_id, c.status]), [['oA', 'settled'], ['oB', 'settled'], ['oC', 'settled'], ['oD', 'settled']]);
  // B's first execution died with its worker: a crash, taken over, not an attempt.
  const [row] = await srv.db.sql`select attempts, crashes from kiln_private.generations where run_id = ${run} and output_node_id = 'oB'`;
  assert.deepEqual([row.attempts, row.crashes], [1, 1]);
});
