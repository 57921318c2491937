// A restore in the middle of work (docs/operators.md, "Backups and restore"), with Debian's
// PostgreSQL tools and a real `kiln serve`: a primary archiving its WAL; `kiln serve` on it (as a
// kiln_app member) runs a wide workflow run (many independent outputs) and a stream of
// generations at a provider that takes seconds, and sends their webhooks to a receiver that takes
// seconds to answer; a base backup (`pg_basebackup`) is taken meanwhile. The primary is then lost,
// and the backup restored to its end into a new cluster (restore_command from the archive,
// recovery_target = 'immediate', recovery.signal), and a new `kiln serve` started on it:
// - `kiln doctor` on the restored database, before the service starts, reports the old workers'
//   leases and the jobs they held;
// - within 60 s (not graphile-worker's 4-hour lock expiry) every generation pending or in flight at
//   the restore point is running again under a live worker or has ended;
// - each ends completed, or failed uncharged; none is charged twice in the restored ledger, and the
//   run completes with every output charged once;
// - every webhook delivery pending at the restore point arrives, with its original webhook-id;
// - `kiln doctor --fix` then finds nothing left to fix.
// It takes about 35–45 s on a 2-core shared machine (two `kiln serve` starts, a backup, a recovery;
// 34–38 s measured alongside other test files).

import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { cleanupServers, freePort, PG_BIN } from './_pgbouncer.ts';
import { baseBackup, restoreCluster, startPrimary, walArchive } from './_replica.ts';
import { startOpenAIPeer } from './_openai-peer.ts';
import { startReceiver } from './_webhooks.ts';
import { chatAfter, userText } from './_workflows.ts';
import { generateKey } from '../src/auth/secrets.ts';
import { onCleanup } from './_setup.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ROLE = 'kiln_restore_service';
/** Independent prompt → output pairs of the workflow. */
const WIDTH = 24;

onCleanup(cleanupServers);

/** `kiln serve` on `url` as the service role; resolves once /readyz answers 200. */
async function serve(url: string, env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; base: string; log: () => string }> {
  const port = await freePort();
  const u = new URL(url);
  u.username = ROLE;
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env, ...env, DATABASE_URL: u.toString(), PORT: String(port), KILN_LOG: 'warn',
    KILN_WORKER_CONCURRENCY: '16', KILN_WEBHOOK_ALLOW_PRIVATE: '1',
  };
  delete childEnv.KILN_DATABASE_OWNER_URL;
  const child = spawn(process.execPath, [BIN, 'serve'], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout!.on('data', (d) => (log += d));
  child.stderr!.on('data', (d) => (log += d));
  onCleanup(async () => { if (child.exitCode === null) child.kill('SIGKILL'); });
  for (let i = 0; ; i++) {
    const r = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null);
    if (r?.status === 200) break;
    if (i > 600 || child.exitCode !== null) throw new Error(`kiln serve did not start: ${log}`);
    await sleep(100);
  }
  return { child, base: `http://127.0.0.1:${port}/api/v1`, log: () => log };
}

/** `kiln doctor ARGS` as the service role on `url`; its JSON whatever the exit code. */
async function doctor(url: string, args: string[] = []) {
  const u = new URL(url);
  u.username = ROLE;
  const r = await promisify(execFile)(process.execPath, [BIN, 'doctor', ...args], {
    env: { ...process.env, DATABASE_URL: u.toString(), KILN_LOG: 'silent' }, timeout: 60_000,
  }).then((o) => ({ code: 0, ...o }), (e: any) => ({ code: e.code as number, stdout: e.stdout as string, stderr: e.stderr as string }));
  return { ...r, json: r.stdout.trim() ? JSON.parse(r.stdout) : undefined };
}

test('a restore in the middle of work: every open generation runs again or ends within 60 s, none charged twice, pending webhooks delivered with their webhook-id, and kiln doctor --fix finds nothing left', {
  skip: PG_BIN ? false : 'Debian\'s PostgreSQL tools are not installed (apt-get install postgresql)', timeout: 240_000,
}, async (t) => {
  // Before the restore the provider and the receiver take seconds, so work is in flight at the
  // backup; after it they answer at once.
  let restored = false;
  const peer = await startOpenAIPeer();
  onCleanup(() => peer.close());
  peer.script((req) => chatAfter(restored ? 100 : 3000, `done: ${userText(req).slice(0, 40)}`));
  const receiver = await startReceiver();
  const afterRestore = new Set<object>();
  receiver.reply = (d) => {
    if (restored) afterRestore.add(d);
    return { status: 200, delayMs: restored ? 0 : 2500 };
  };
  const receivedAfterRestore = () => receiver.got.filter((d) => afterRestore.has(d));

  const archive = walArchive();
  const primary = await startPrimary({ archive });
  const owner = postgres(primary.url, { max: 2, onnotice: () => {} });
  onCleanup(() => owner.end({ timeout: 1 }));
  await owner.unsafe(`create role ${ROLE} login in role kiln_app`);
  const [acct] = await owner`select * from kiln.create_account(${`restore-${Date.now()}@example.test`}, 'enterprise', null, false)`;
  await owner`update kiln_private.accounts set parallel_slots = 64 where id = ${acct!.id}`;
  const { key, hash, displayPrefix } = generateKey();
  await owner`select * from kiln.create_api_key(${acct!.id}, ${hash}, ${displayPrefix}, ${['read', 'write']}, null, null, null)`;
  await owner`select kiln.upsert_model(${owner.json({
    id: 'peer/coder', name: 'Peer coder', category: 'text', provider: 'openai', upstream: { baseUrl: peer.url, model: 'peer-chat' },
    cost: { input_micros_per_token: 1, output_micros_per_token: 2 }, maxOutputTokens: 1000, markup: 1,
  })})`;
  await owner.end();

  const first = await serve(primary.url, {});
  const call = async (base: string, p: string, body?: unknown) => {
    const res = await fetch(base + p, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json().catch(() => null) as any };
  };
  // The endpoint, registered before the backup.
  const hook = await call(first.base, '/webhooks', { url: receiver.url });
  assert.equal(hook.status, 201, JSON.stringify(hook.body));
  const nodes = [];
  const edges = [];
  for (let i = 0; i < WIDTH; i++) {
    nodes.push({ id: `p${i}`, kind: 'prompt', output: 'code', model: 'peer/coder', prompt: `output ${i}` }, { id: `o${i}`, kind: 'output' });
    edges.push({ from: `p${i}`, to: `o${i}` });
  }
  const wf = await call(first.base, '/workflows', { name: 'wide', graph: { nodes, edges } });
  assert.equal(wf.status, 201, JSON.stringify(wf.body));

  // A stream of generations, one every 150 ms until the backup is done.
  let streaming = true;
  const accepted: string[] = [];
  const stream = (async () => {
    for (let i = 0; streaming; i++) {
      const r = await call(first.base, '/generations', { type: 'code', model: 'peer/coder', prompt: `stream ${i}`, targetLanguage: 'tsx' }).catch(() => null);
      if (r?.status === 202) accepted.push(r.body.id);
      await sleep(150);
    }
  })();
  // Let the first generations end (their webhooks then wait on the slow receiver), start the run, back up.
  await sleep(5000);
  const run = await call(first.base, `/workflows/${wf.body.id}/runs`, {});
  assert.equal(run.status, 202, JSON.stringify(run.body));
  await sleep(1000);
  const backupStarted = Date.now();
  const backup = await baseBackup(primary);
  t.diagnostic(`pg_basebackup took ${Date.now() - backupStarted} ms; ${accepted.length} generations accepted so far`);
  streaming = false;
  await stream;
  // The primary is lost, with the service on it.
  first.child.kill('SIGKILL');
  await primary.stop('immediate');

  // Point-in-time restore to the end of the backup, into a new cluster.
  const restoredAt = Date.now();
  const cluster = await restoreCluster(backup, archive);
  t.diagnostic(`restored in ${Date.now() - restoredAt} ms`);
  restored = true;
  const db = postgres(cluster.url, { max: 2, onnotice: () => {} });
  onCleanup(() => db.end({ timeout: 1 }));
  const open = (await db<Array<{ id: string; status: string }>>`
    select id, status from kiln_private.generations where status in ('pending', 'processing') order by created_at`).map((g) => g.id);
  const [runRow] = await db`select status from kiln_private.workflow_runs where id = ${run.body.id}`;
  const pendingDeliveries = await db<Array<{ id: string; event_id: string }>>`
    select id, event_id::text from kiln_private.webhook_deliveries where status = 'pending' and endpoint_id = ${hook.body.id}`;
  t.diagnostic(`at the restore point: ${open.length} generations open, the run ${runRow?.status}, ${pendingDeliveries.length} deliveries pending`);
  assert.ok(open.length >= 5, `generations were in flight at the backup: ${open.length}`);
  assert.ok(runRow && ['pending', 'running'].includes(runRow.status), `the run was in flight at the backup: ${runRow?.status}`);
  assert.ok(pendingDeliveries.length > 0, 'webhook deliveries were pending at the backup');

  // Before the service starts: the doctor sees the old cluster's workers, and the jobs they hold.
  const before = await doctor(cluster.url);
  assert.equal(before.code, 1, before.stderr);
  assert.ok(before.json.checks.dead_workers.count >= 1, JSON.stringify(before.json.checks.dead_workers));
  assert.ok(before.json.checks.orphan_jobs.count >= 1, JSON.stringify(before.json.checks.orphan_jobs));
  assert.equal(before.json.checks.double_charges.count, 0);

  // The service on the restored database: open work runs again, without anyone's help.
  const startedAt = Date.now();
  const second = await serve(cluster.url, {});
  let recoveredMs = -1;
  let lagging: readonly unknown[] = [];
  while (Date.now() - startedAt <= 60_000) {
    lagging = await db`
      select g.id, g.status, g.worker_id from kiln_private.generations g
      where g.id = any(${open}::uuid[])
        and not (g.status in ('completed', 'failed')
                 or (g.status = 'processing' and g.worker_id is not null and kiln_private.worker_alive(g.worker_id, 30)))`;
    if (lagging.length === 0) {
      recoveredMs = Date.now() - startedAt;
      break;
    }
    await sleep(250);
  }
  t.diagnostic(`every open generation was running again or ended ${recoveredMs} ms after kiln serve started`);
  assert.ok(recoveredMs >= 0, `not running again within 60 s: ${JSON.stringify(lagging)}\n${second.log().slice(-3000)}`);

  // Each ends; the run completes.
  let unfinished: readonly unknown[] = [];
  for (const until = Date.now() + 60_000; Date.now() < until;) {
    unfinished = await db`
      select id, status from kiln_private.generations where status not in ('completed', 'failed')
      union all select id, status from kiln_private.workflow_runs where status not in ('completed', 'failed')`;
    if (unfinished.length === 0) break;
    await sleep(250);
  }
  assert.deepEqual([...unfinished], [], `work still open after the restore:\n${second.log().slice(-3000)}`);
  const [runAfter] = await db`select status, error from kiln_private.workflow_runs where id = ${run.body.id}`;
  assert.equal(runAfter!.status, 'completed', JSON.stringify(runAfter));

  // The restored ledger: each generation charged once if completed, never if failed; nothing held.
  const ledger = await db<Array<{ id: string; status: string; settled: number; held: number }>>`
    select g.id, g.status, count(c.id) filter (where c.status = 'settled')::int as settled, count(c.id) filter (where c.status = 'reserved')::int as held
    from kiln_private.generations g left join kiln_private.charges c on c.generation_id = g.id group by g.id, g.status`;
  assert.deepEqual(ledger.filter((c) => c.settled > 1), [], 'none charged twice');
  assert.deepEqual(ledger.filter((c) => c.held > 0), [], 'no reservation left held');
  assert.deepEqual(ledger.filter((c) => c.status === 'completed' && c.settled !== 1), [], 'each completed one charged once');
  assert.deepEqual(ledger.filter((c) => c.status === 'failed' && c.settled !== 0), [], 'none failed charged');
  assert.ok(ledger.filter((c) => open.includes(c.id)).every((c) => c.status === 'completed'), 'the open ones completed');
  const outputs = await db`select node_id, status from kiln_private.charges where workflow_run_id = ${run.body.id} order by node_id`;
  assert.equal(outputs.length, WIDTH);
  assert.ok(outputs.every((o) => o.status === 'settled'), JSON.stringify(outputs));

  // Every delivery pending at the restore point arrives, with its original webhook-id.
  const expected = pendingDeliveries.map((d) => `msg_${d.event_id}`).sort();
  let got: string[] = [];
  for (const until = Date.now() + 30_000; Date.now() < until;) {
    got = [...new Set(receivedAfterRestore().map((d) => String(d.headers['webhook-id'])))];
    if (expected.every((id) => got.includes(id))) break;
    await sleep(200);
  }
  assert.deepEqual(expected.filter((id) => !got.includes(id)), [], 'pending deliveries not delivered after the restore');
  const [{ n: undelivered }] = await db`
    select count(*)::int as n from kiln_private.webhook_deliveries where id = any(${pendingDeliveries.map((d) => d.id)}::uuid[]) and status <> 'delivered'`;
  assert.equal(undelivered, 0);

  // The doctor, with the service still running: nothing left to fix.
  const after = await doctor(cluster.url, ['--fix']);
  assert.equal(after.code, 0, `${after.stderr}${JSON.stringify(after.json?.checks, null, 1)}`);
  assert.equal(after.json.ok, true);
  assert.deepEqual(after.json.fixed, { workers_forgotten: 0, pools_unlocked: 0, jobs_unlocked: 0, reservations_released: 0, released_micros: 0 });

  second.child.kill('SIGTERM');
  await new Promise((r) => second.child.once('exit', r));
});
