// `kiln doctor` (docs/operators.md, "Backups and restore"), as the operator runs it: the real
// command as a child process, as the service role, on a test database where each problem it looks
// for is planted — a dead worker's lease and the job it holds, jobs locked by pools no worker
// registered, a reservation and a settled charge without a generation, a reservation of a failed
// generation, one held past its run window, a generation charged twice, an image whose store row is
// gone and, with the s3 store, one whose bytes are gone. It reports each; --fix repairs what is safe,
// each repair an audit entry of the operator, and leaves the rest listed; a second --fix finds
// nothing to do.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { before, test } from 'node:test';
import { promisify } from 'node:util';
import { DeleteObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startTestWorker, waitFor } from './_generations.ts';
import { startS3, type TestS3 } from './_s3.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');

let srv: TestServer;
let s3: TestS3;

before(async () => {
  s3 = await startS3('kiln-doctor');
  srv = await startServer();
});

/** `kiln doctor ARGS` as the service role; its JSON whatever the exit code. */
async function doctor(args: string[] = [], env: Record<string, string> = {}) {
  const r = await promisify(execFile)(process.execPath, [BIN, 'doctor', ...args], {
    env: { ...process.env, DATABASE_URL: srv.db.url, KILN_LOG: 'silent', ...env },
    timeout: 60_000,
  }).then((o) => ({ code: 0, ...o }), (e: any) => ({ code: e.code as number, stdout: e.stdout as string, stderr: e.stderr as string }));
  return { ...r, json: r.stdout.trim() ? JSON.parse(r.stdout) : undefined };
}

/** A job of a task no worker runs, locked by `pool` since `lockedAgo` (an interval). */
async function lockedJob(pool: string, lockedAgo: string): Promise<string> {
  const [{ id }] = await srv.db.sql`select (graphile_worker.add_job('doctor__planted', '{}'::json)).id::text as id`;
  await srv.db.sql`update graphile_worker._private_jobs set locked_by = ${pool}, locked_at = now() - ${lockedAgo}::interval where id = ${id}::bigint`;
  return id;
}

const ids = (f: any, key: string) => f.items.map((i: any) => String(i[key])).sort();

test('kiln doctor reports each planted problem, --fix repairs what is safe (audited, as the operator) and leaves the rest listed', { timeout: 120_000 }, async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const { key } = await createKey(srv.db.sql, a.id);
  const worker = await startTestWorker(srv);
  // Two real images (the local model), stored in Postgres.
  const made = [];
  for (const prompt of ['a kiln', 'a kiln at dusk']) {
    const res = await api(srv.base, key, '/generations', { body: { type: 'image', prompt } });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    made.push(await waitFor(srv, key, res.body.id, { timeoutMs: 30_000 }));
  }
  assert.deepEqual(made.map((g) => g.status), ['completed', 'completed']);

  // A healthy database, with a live worker: nothing found.
  const clean = await doctor();
  assert.equal(clean.code, 0, clean.stderr + clean.stdout);
  assert.equal(clean.json.ok, true, clean.stdout);
  assert.equal(clean.json.store, 'postgres');
  assert.deepEqual(Object.keys(clean.json.checks).sort(), ['dead_workers', 'double_charges', 'missing_objects', 'orphan_charges', 'orphan_jobs', 'unsettled_reservations']);
  for (const [name, f] of Object.entries<any>(clean.json.checks)) assert.equal(f.count, 0, `${name}: ${JSON.stringify(f)}`);
  // The live worker's sweep would repair the planted leases itself: stopped now.
  await worker.stop();

  // Planted: a worker whose lease nobody holds (a restored database's), holding a job.
  const leaseKey = 2_000_000_000 + Math.floor(Math.random() * 100_000_000);
  await srv.db.sql`insert into kiln_private.worker_heartbeats (worker_id, hostname, pid, lease_key, pool_id, last_seen)
                   values (${`lease-${leaseKey}`}, 'gone-host', 4242, ${leaseKey}, 'pool-dead', now() - interval '1 hour')`;
  const deadJob = await lockedJob('pool-dead', '10 minutes');
  // Jobs locked by pools no worker registered: long ago (fixable), and just now (a worker may be starting).
  const ghostJob = await lockedJob('pool-ghost', '1 hour');
  const youngJob = await lockedJob('pool-young', '0 seconds');
  // A reservation and a settled charge naming no generation.
  const [orphanHeld] = await srv.db.sql`select id from kiln.reserve_budget(${a.id}, null, null, 'local/sketch', 'api', 1000)`;
  const [orphanSettled] = await srv.db.sql`select id from kiln.reserve_budget(${a.id}, null, null, 'local/sketch', 'api', 2000)`;
  await srv.db.sql`select kiln.settle_charge(${orphanSettled!.id}, 1500)`;
  // Two generations accepted while no worker runs: one failed behind the ledger's back (its
  // reservation left held), one held for 30 days (past its run window).
  const pending = [];
  for (const prompt of ['ended', 'stuck']) {
    const res = await api(srv.base, key, '/generations', { body: { type: 'image', prompt } });
    assert.equal(res.status, 202);
    pending.push(res.body.id as string);
  }
  const [ended, stuck] = pending as [string, string];
  await srv.db.sql`update kiln_private.generations set status = 'failed', error = 'planted', finished_at = now() where id = ${ended}`;
  await srv.db.sql`update kiln_private.generations set created_at = now() - interval '30 days' where id = ${stuck}`;
  const [endedCharge] = await srv.db.sql`select charge_id from kiln_private.generations where id = ${ended}`;
  const [stuckCharge] = await srv.db.sql`select charge_id from kiln_private.generations where id = ${stuck}`;
  // The first image charged a second time; the second image's store row gone.
  const [second] = await srv.db.sql`select id from kiln.reserve_budget(${a.id}, null, null, 'local/sketch', 'api', 1000, ${made[0].id})`;
  await srv.db.sql`select kiln.settle_charge(${second!.id}, 1000)`;
  const [{ path: lostPath }] = await srv.db.sql`select result->>'path' as path from kiln_private.generations where id = ${made[1].id}`;
  assert.ok(lostPath);
  await srv.db.sql`delete from kiln_private.objects where path = ${lostPath}`;

  const seen = await doctor(['--limit', '50']);
  assert.equal(seen.code, 1, 'exit code 1: something to fix or to look at');
  const c = seen.json.checks;
  assert.equal(seen.json.ok, false);
  assert.deepEqual(ids(c.dead_workers, 'worker_id'), [`lease-${leaseKey}`]);
  assert.equal(c.dead_workers.items[0].locked_jobs, 1);
  assert.equal(c.dead_workers.fixable, 1);
  assert.deepEqual(ids(c.orphan_jobs, 'job_id'), [deadJob, ghostJob, youngJob].sort());
  assert.deepEqual(Object.fromEntries(c.orphan_jobs.items.map((i: any) => [String(i.job_id), i.fixable])), { [deadJob]: true, [ghostJob]: true, [youngJob]: false });
  assert.equal(c.orphan_jobs.fixable, 2);
  assert.deepEqual(ids(c.orphan_charges, 'charge_id'), [orphanHeld!.id, orphanSettled!.id].sort());
  assert.equal(c.orphan_charges.fixable, 1, 'only the reservation: a settled charge is for the operator');
  assert.deepEqual(Object.fromEntries(c.unsettled_reservations.items.map((i: any) => [i.charge_id, i.reason])),
    { [endedCharge!.charge_id]: 'generation_ended', [stuckCharge!.charge_id]: 'past_run_window' });
  assert.equal(c.unsettled_reservations.fixable, 1);
  assert.deepEqual(c.double_charges.items.map((i: any) => [i.generation_id, i.settled_charges]), [[made[0].id, 2]]);
  assert.deepEqual(c.missing_objects.items.map((i: any) => [i.generation_id, i.path]), [[made[1].id, lostPath]]);
  assert.equal(seen.json.to_fix, 1 + 2 + 1 + 1);
  assert.equal(seen.json.to_review, 1 + 1 + 1 + 1 + 1);
  // A report changes nothing.
  const [{ n: locked }] = await srv.db.sql`select count(*)::int as n from graphile_worker.jobs where locked_by is not null`;
  assert.equal(locked, 3);

  const before = new Date();
  const fixed = await doctor(['--fix']);
  assert.equal(fixed.code, 1, 'what is not safe to repair is still listed');
  assert.deepEqual(fixed.json.fixed, { workers_forgotten: 1, pools_unlocked: 1, jobs_unlocked: 2, reservations_released: 2, released_micros: 1000 + Number((await srv.db.sql`select reserved_micros from kiln_private.charges where id = ${endedCharge!.charge_id}`)[0]!.reserved_micros) });
  assert.equal(fixed.json.to_fix, 0);
  assert.equal(fixed.json.to_review, 5, JSON.stringify(fixed.json.checks, null, 1));
  const left = fixed.json.checks;
  assert.equal(left.dead_workers.count, 0);
  assert.deepEqual(ids(left.orphan_jobs, 'job_id'), [youngJob]);
  assert.deepEqual(ids(left.orphan_charges, 'charge_id'), [orphanSettled!.id]);
  assert.deepEqual(ids(left.unsettled_reservations, 'charge_id'), [stuckCharge!.charge_id]);
  assert.equal(left.double_charges.count, 1);
  assert.equal(left.missing_objects.count, 1);

  // The database as the fix left it.
  const jobs = await srv.db.sql`select id::text, locked_by from graphile_worker.jobs where id = any(${[deadJob, ghostJob, youngJob]}::bigint[]) order by id`;
  assert.deepEqual(Object.fromEntries(jobs.map((j) => [j.id, j.locked_by])), { [deadJob]: null, [ghostJob]: null, [youngJob]: 'pool-young' });
  assert.equal((await srv.db.sql`select 1 from kiln_private.worker_heartbeats where lease_key = ${leaseKey}`).length, 0);
  const ledger = await srv.db.sql`select id, status from kiln_private.charges where id = any(${[orphanHeld!.id, orphanSettled!.id, endedCharge!.charge_id, stuckCharge!.charge_id]}::uuid[])`;
  assert.deepEqual(Object.fromEntries(ledger.map((r) => [r.id, r.status])), {
    [orphanHeld!.id]: 'released', [orphanSettled!.id]: 'settled', [endedCharge!.charge_id]: 'released', [stuckCharge!.charge_id]: 'reserved',
  });
  // Nothing stays held on the account's budget but the stuck generation's reservation.
  const [{ held }] = await srv.db.sql`select coalesce(sum(held_micros), 0)::bigint::text as held from kiln_private.budget_periods where pool_id = ${a.id}`;
  assert.equal(held, String((await srv.db.sql`select reserved_micros from kiln_private.charges where id = ${stuckCharge!.charge_id}`)[0]!.reserved_micros));

  // Each repair is one audit entry, the operator's (the service's login), the releases in the account's scope.
  const audit = await srv.db.sql`select action, actor_type, actor_id, scope_id, target_type, target_id, details from kiln_private.audit_log
                                 where action like 'doctor.%' and at >= ${before} order by at, action, target_id`;
  const [{ role }] = await srv.db.app`select session_user as role`;
  assert.ok(audit.every((e) => e.actor_type === 'operator' && e.actor_id === role), JSON.stringify(audit));
  assert.deepEqual(audit.map((e) => [e.action, e.target_type, e.target_id, e.scope_id]).sort(), [
    ['doctor.jobs_unlocked', 'worker', 'pool-ghost', null],
    ['doctor.reservation_released', 'charge', endedCharge!.charge_id, a.id],
    ['doctor.reservation_released', 'charge', orphanHeld!.id, a.id],
    ['doctor.worker_forgotten', 'worker', `lease-${leaseKey}`, null],
  ].sort());
  const reasons = Object.fromEntries(audit.filter((e) => e.action === 'doctor.reservation_released').map((e) => [e.target_id, e.details.reason]));
  assert.deepEqual(reasons, { [orphanHeld!.id]: 'no_generation', [endedCharge!.charge_id]: 'generation_ended' });
  assert.equal(audit.find((e) => e.action === 'doctor.worker_forgotten')!.details.jobs_unlocked, 1);

  // Idempotent: a second --fix repairs nothing.
  const again = await doctor(['--fix']);
  assert.deepEqual(again.json.fixed, { workers_forgotten: 0, pools_unlocked: 0, jobs_unlocked: 0, reservations_released: 0, released_micros: 0 });
  assert.equal(again.json.to_fix, 0);

  // Usage errors: exit code 2, nothing on stdout.
  for (const args of [['--limit', '0'], ['--objects', 'many'], ['--full', '--objects', '5'], ['--fix=maybe'], ['--frob']]) {
    const r = await doctor(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '');
  }
});

test('with the s3 store, kiln doctor HEADs the newest objects (or every one with --full) and lists those whose bytes are gone', { timeout: 120_000 }, async () => {
  const store = s3.store();
  const s3srv = await startServer({ config: { store } });
  const a = await createAccount(s3srv.db.sql, { tier: 'pro' });
  const { key } = await createKey(s3srv.db.sql, a.id);
  const worker = await startTestWorker(s3srv);
  const made = [];
  for (const prompt of ['one', 'two', 'three']) {
    const res = await api(s3srv.base, key, '/generations', { body: { type: 'image', prompt } });
    made.push(await waitFor(s3srv, key, res.body.id, { timeoutMs: 30_000 }));
  }
  await worker.stop();
  const rows = await s3srv.db.sql`select path, location from kiln_private.objects where backend = 's3' and owner_id = ${a.id} order by created_at`;
  assert.equal(rows.length, 3);
  const env = { ...s3.env(), DATABASE_URL: s3srv.db.url };
  const run = (args: string[]) => promisify(execFile)(process.execPath, [BIN, 'doctor', ...args], { env: { ...process.env, KILN_LOG: 'silent', ...env }, timeout: 60_000 })
    .then((o) => ({ code: 0, json: JSON.parse(o.stdout) }), (e: any) => ({ code: e.code as number, json: e.stdout ? JSON.parse(e.stdout) : undefined, stderr: e.stderr }));

  const clean = await run([]);
  assert.equal(clean.code, 0, JSON.stringify(clean));
  assert.equal(clean.json.store, 's3');
  assert.deepEqual({ ...clean.json.checks.missing_bytes, checked: clean.json.checks.missing_bytes.checked >= 3 }, { count: 0, fixable: 0, items: [], checked: true, full: false });

  // The oldest image's bytes gone from the bucket.
  const client = new S3Client({ region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true });
  await client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: rows[0]!.location }));
  const full = await run(['--full']);
  assert.equal(full.code, 1);
  assert.deepEqual(full.json.checks.missing_bytes.items.map((i: any) => [i.path, i.location, i.fixable]), [[rows[0]!.path, rows[0]!.location, false]]);
  assert.equal(full.json.checks.missing_bytes.full, true);
  assert.equal(full.json.to_review, 1);
  // Bounded: only the newest two are looked at, and the oldest is not among them.
  const newest = await run(['--objects', '2']);
  assert.equal(newest.code, 0, JSON.stringify(newest.json));
  assert.equal(newest.json.checks.missing_bytes.checked, 2);
  // --fix cannot bring bytes back: it is still listed.
  const fix = await run(['--fix', '--full']);
  assert.equal(fix.json.checks.missing_bytes.count, 1);
  assert.equal(fix.json.fixed.reservations_released, 0);
});
