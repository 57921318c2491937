// The primary fails over under load (docs/operators.md, "Failover"): a primary with one synchronous
// standby, reached through one address (a loopback TCP proxy standing in for a virtual IP); `kiln
// serve` (a real process, as a kiln_app member) takes a steady stream of POSTs while its worker
// runs them. The primary is stopped with `pg_ctl stop -m immediate`, the standby promoted with
// `pg_ctl promote`, and the address switched to it. Kiln never exits and never answers 500; while
// there is no primary it answers 503 with Retry-After; within 15 s of the switch it answers
// normally again; every generation accepted ends completed or failed uncharged, charged at most once.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import postgres from 'postgres';
import { cleanupServers, PG_BIN, freePort } from './_pgbouncer.ts';
import { startPrimary, startStandby } from './_replica.ts';
import { startTcpProxy } from './_tcp-proxy.ts';
import { generateKey } from '../src/auth/secrets.ts';
import { onCleanup } from './_setup.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');
// The clusters test/_replica.ts starts are stopped when the file ends.
onCleanup(cleanupServers);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('failover under load: no 500, 503 with Retry-After meanwhile, normal within 15 s of the switch, every accepted generation ends and is charged at most once', {
  skip: PG_BIN ? false : 'Debian\'s PostgreSQL tools are not installed (apt-get install postgresql)', timeout: 240_000,
}, async (t) => {
  const primary = await startPrimary({ durable: true });
  const standby = await startStandby(primary, { durable: true });
  const admin = postgres(primary.url, { max: 1, onnotice: () => {} });
  onCleanup(() => admin.end({ timeout: 1 }));
  // One synchronous standby: a commit the primary acknowledged is on the standby too.
  await admin.unsafe(`alter system set synchronous_standby_names = 'walreceiver'`);
  await admin`select pg_reload_conf()`;
  for (let i = 0; ; i++) {
    const [r] = await admin`select sync_state from pg_stat_replication`;
    if (r?.sync_state === 'sync') break;
    if (i > 100) throw new Error('the standby never became synchronous');
    await sleep(100);
  }
  await admin.unsafe(`create role kiln_failover_service login in role kiln_app`);
  const [acct] = await admin`select * from kiln.create_account(${`failover-${Date.now()}@example.test`}, 'enterprise', null, false)`;
  const { key, hash, displayPrefix } = generateKey();
  await admin`select * from kiln.create_api_key(${acct.id}, ${hash}, ${displayPrefix}, ${['read', 'write']}, null, null, null)`;
  await admin.end();

  const proxy = await startTcpProxy(primary.port);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env, DATABASE_URL: `postgres://kiln_failover_service@127.0.0.1:${proxy.port}/kiln`, PORT: String(port), KILN_LOG: 'warn',
    KILN_WORKER_CONCURRENCY: '4',
  };
  delete env.KILN_DATABASE_OWNER_URL;
  const child = spawn(process.execPath, [BIN, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  let exited: number | null | undefined;
  child.on('exit', (code) => { exited = code; });
  onCleanup(async () => { if (child.exitCode === null) child.kill('SIGKILL'); });
  const base = `http://127.0.0.1:${port}/api/v1`;
  for (let i = 0; ; i++) {
    const r = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null);
    if (r?.status === 200) break;
    if (i > 300 || exited !== undefined) throw new Error(`kiln serve did not start: ${log}`);
    await sleep(100);
  }

  // The load: one POST every 40 ms, each as a client sends it (its own Idempotency-Key).
  type Sent = { at: number; status: number; ms: number; retryAfter: string | null; id?: string; type?: string };
  const sent: Sent[] = [];
  let loading = true;
  let n = 0;
  const inflight: Promise<void>[] = [];
  const load = (async () => {
    while (loading) {
      const i = n++;
      inflight.push((async () => {
        const t0 = Date.now();
        const res = await fetch(`${base}/generations`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': `failover-${i}` },
          body: JSON.stringify({ type: 'code', prompt: `failover ${i}`, targetLanguage: 'tsx' }),
          signal: AbortSignal.timeout(60_000),
        }).catch(() => null);
        const body = res ? await res.json().catch(() => null) : null;
        sent.push({ at: t0, status: res?.status ?? 0, ms: Date.now() - t0, retryAfter: res?.headers.get('retry-after') ?? null, id: body?.id, type: body?.error?.type });
      })());
      await sleep(40);
    }
  })();

  await sleep(3000);
  const failedAt = Date.now();
  await primary.stop('immediate');
  await sleep(2000);
  await standby.promote();
  proxy.point(standby.port);
  const switchedAt = Date.now();
  await sleep(16_000);
  loading = false;
  await load;
  await Promise.all(inflight);

  assert.equal(exited, undefined, `kiln serve exited (${exited}) during the failover:\n${log}`);
  const statuses = new Map<number, number>();
  for (const s of sent) statuses.set(s.status, (statuses.get(s.status) ?? 0) + 1);
  const detail = `statuses ${JSON.stringify([...statuses])}; log:\n${log.slice(-3000)}`;
  assert.ok(sent.every((s) => s.status !== 0), `every request was answered: ${detail}`);
  assert.ok(sent.every((s) => s.status < 500 || s.status === 503), `no 500: ${detail}`);
  assert.ok(sent.filter((s) => s.status === 503).every((s) => /^\d+$/.test(s.retryAfter ?? '')), `503s carry Retry-After: ${detail}`);
  assert.ok(sent.every((s) => s.ms <= 30_000), `none hangs past 30 s: max ${Math.max(...sent.map((s) => s.ms))} ms`);
  assert.ok(sent.some((s) => s.at < failedAt && s.status === 202), 'accepted before the failure');
  // Normal again within 15 s of the switch: a run of 10 accepted requests in a row has begun by
  // then (a lone 503 later, when the loaded machine times the limiter out, is not the failover's).
  const after = sent.filter((s) => s.at >= switchedAt).sort((a, b) => a.at - b.at);
  let streak = 0;
  let normalAt: number | null = null;
  for (let i = 0; i < after.length && normalAt === null; i++) {
    streak = after[i]!.status === 202 ? streak + 1 : 0;
    if (streak === 10) normalAt = after[i - 9]!.at - switchedAt;
  }
  const refusedAfter = after.filter((s) => s.status !== 202).map((s) => `${s.at - switchedAt}ms:${s.status}/${s.type}(${s.ms}ms)`).join(' ');
  t.diagnostic(`normal again ${normalAt} ms after the switch; ${after.filter((s) => s.status !== 202).length} refused after it`);
  assert.ok(normalAt !== null && normalAt <= 15_000, `answers normally ${normalAt} ms after the switch (goal ≤ 15 s); refused after the switch: ${refusedAfter}; ${detail}`);
  assert.ok(after.some((s) => s.status === 202), 'accepted after the switch');

  // Every accepted generation ends, on the new primary: completed, or failed with nothing charged.
  const accepted = sent.filter((s) => s.status === 202 && s.id).map((s) => s.id!);
  const db = postgres(standby.url, { max: 2, onnotice: () => {} });
  onCleanup(() => db.end({ timeout: 1 }));
  let open: Array<{ id: string; status: string }> = [];
  for (const until = Date.now() + 90_000; Date.now() < until;) {
    open = [...await db<Array<{ id: string; status: string }>>`select id, status from kiln_private.generations where id = any(${accepted}::uuid[]) and status not in ('completed', 'failed', 'canceled')`];
    if (open.length === 0) break;
    await sleep(500);
  }
  assert.deepEqual(open, [], `accepted generations still open after the failover: ${detail}`);
  const found = await db`select count(*)::int as n from kiln_private.generations where id = any(${accepted}::uuid[])`;
  assert.equal(found[0]!.n, new Set(accepted).size, 'every accepted generation is on the promoted standby (synchronous replication)');
  const charges = await db`
    select g.id, g.status, count(c.id) filter (where c.status = 'settled')::int as settled, count(c.id) filter (where c.status = 'reserved')::int as held
    from kiln_private.generations g left join kiln_private.charges c on c.generation_id = g.id
    where g.id = any(${accepted}::uuid[]) group by g.id, g.status`;
  assert.deepEqual(charges.filter((c) => c.settled > 1), [], 'none charged twice');
  assert.deepEqual(charges.filter((c) => c.held > 0), [], 'no reservation left held');
  assert.deepEqual(charges.filter((c) => c.status === 'completed' && c.settled !== 1), [], 'each completed one charged once');
  assert.deepEqual(charges.filter((c) => c.status !== 'completed' && c.settled !== 0), [], 'none failed charged');
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
});
