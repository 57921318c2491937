// Benchmark (issue 31): a soak of the scale-out shape. Two `kiln api` and two `kiln worker`
// processes, first behind PgBouncer in transaction mode (KILN_DATABASE_POOLER_URL), then with
// direct connections only, each under the same steady mix of POST /generations and GETs for
// KILN_SOAK_SECONDS (default 300) per mode. Reports throughput, p50/p99 latency, the server
// connections in use (pg_stat_activity, sampled once a second) and the queue's oldest job.
// `KILN_BENCH_ONLY=soak npm run bench` runs it (after the foundation); not part of `npm test`.

import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import autocannon from 'autocannon';
import { cleanupServers, PGBOUNCER, startPgBouncer, type Bouncer } from '../_pgbouncer.ts';
import { clusterTicks, cpuTicks, TICKS_PER_SECOND } from './_env.ts';
import type { BenchContext } from './run.ts';

const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'kiln.js');

interface Proc { child: ChildProcess; base: string }

function spawnKiln(command: 'api' | 'worker', dbUrl: string, env: Record<string, string>): Promise<Proc> {
  const child = spawn(process.execPath, [BIN, command], {
    env: { ...process.env, DATABASE_URL: dbUrl, PORT: '0', KILN_LOG: 'error', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on('line', (l) => {
      const m = /listening on (http:\S+)/.exec(l);
      if (m) resolve({ child, base: m[1]! });
      else if (/worker started/i.test(l)) resolve({ child, base: '' });
    });
    child.once('exit', (c) => reject(new Error(`kiln ${command} exited (${c})`)));
  });
}

async function stop(p: Proc) {
  if (p.child.exitCode !== null) return;
  const done = new Promise((r) => p.child.once('exit', r));
  p.child.kill('SIGTERM');
  await done;
}

export interface SoakFigures {
  seconds: number;
  rps: number;
  postRps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** Server connections to the database (pg_stat_activity), sampled once a second. */
  connections: { max: number; mean: number; byApp: Record<string, number> };
  /** PgBouncer's server pool size (pooled mode). */
  poolSize?: number;
  /** Age of the oldest job waiting in the queue, ms, sampled once a second. */
  oldestJobMs: { max: number; mean: number };
  /** Connections open before the soak's processes started (left out of `connections` and `byApp`). */
  baseline: number;
  generations: number;
  /** CPU time per request (µs) of each kind of process over the soak: where a 2-core machine's time went. */
  cpuPerRequest: { apis: number; workers: number; pgbouncer: number | null; postgres: number | null; loadGenerator: number };
  /** PgBouncer's clients waiting for a server connection (SHOW POOLS cl_waiting), the most seen at once. */
  pgbouncerWaitingMax?: number;
}

async function soak(ctx: BenchContext, mode: 'pooled' | 'direct', seconds: number): Promise<SoakFigures> {
  const { sql } = ctx;
  const poolSize = Number(process.env.KILN_SOAK_PGBOUNCER_POOL ?? 6);
  // The same settings in both modes; graphile-worker's own (direct) pool sized for job fetches only.
  const env: Record<string, string> = { KILN_READ_RPM: '10000000', KILN_DB_POOL_SIZE: '10', KILN_WORKER_DB_POOL_SIZE: process.env.KILN_SOAK_WORKER_POOL ?? '2' };
  let bouncer: Bouncer | null = null;
  if (mode === 'pooled') {
    bouncer = await startPgBouncer(ctx.dbUrl, { poolSize });
    env.KILN_DATABASE_POOLER_URL = bouncer.url;
  }
  // Connections already there (the bench's own server and pool) are not the soak's: their
  // backends are left out by pid (a count would go wrong as they time out during the soak).
  const [{ db: dbName }] = await sql`select current_database() as db`;
  const before0 = await sql`select pid from pg_stat_activity where datname = ${dbName}`;
  const baselinePids = before0.map((r) => r.pid as number);
  const baseline = baselinePids.length;
  const procs = await Promise.all([
    spawnKiln('api', ctx.dbUrl, env), spawnKiln('api', ctx.dbUrl, env), spawnKiln('worker', ctx.dbUrl, env), spawnKiln('worker', ctx.dbUrl, env),
  ]);
  const apis = procs.filter((p) => p.base);
  const [{ db }] = await sql`select current_database() as db`;
  const [before] = await sql`select count(*)::int as n from kiln_private.generations`;
  const ticks = () => ({
    apis: apis.reduce((n, p) => n + cpuTicks(p.child.pid!), 0),
    workers: procs.filter((p) => !p.base).reduce((n, p) => n + cpuTicks(p.child.pid!), 0),
    pgbouncer: bouncer?.pid() ? cpuTicks(bouncer.pid()!) : 0,
    postgres: ctx.meter.postmasterPid ? clusterTicks(ctx.meter.postmasterPid) : 0,
    self: cpuTicks(process.pid),
  });
  let waiting = 0;
  const conns: number[] = [];
  const apps: Record<string, number> = {};
  const oldest: number[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const rows = await sql`select coalesce(nullif(application_name, ''), backend_type) as app, count(*)::int as n from pg_stat_activity
        where datname = ${db} and pid <> pg_backend_pid() and pid <> all (${baselinePids}::int[]) group by 1`;
      conns.push(rows.reduce((n, r) => n + r.n, 0));
      for (const r of rows) apps[r.app] = Math.max(apps[r.app] ?? 0, r.n);
      const [q] = await sql`select coalesce(extract(epoch from now() - min(run_at)) * 1000, 0)::float8 as ms from graphile_worker.jobs
        where locked_at is null and run_at <= now() and attempts < max_attempts`;
      oldest.push(q!.ms);
      if (bouncer) {
        const pools = await bouncer.show('POOLS').catch(() => []);
        waiting = Math.max(waiting, pools.filter((p) => p.database === 'kiln').reduce((n, p) => n + Number(p.cl_waiting), 0));
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  // One POST to three GETs per connection, keys rotating: the list, a usage read and the models.
  let k = 0;
  const auth = () => ({ authorization: `Bearer ${ctx.keys[k++ % ctx.keys.length]}`, 'content-type': 'application/json' });
  const run = (base: string) => autocannon({
    url: base.replace(/\/api\/v1$/, ''),
    connections: 16,
    duration: seconds,
    requests: [
      { method: 'POST', path: '/api/v1/generations', body: JSON.stringify({ type: 'code', model: 'local/coder', prompt: 'soak' }), setupRequest: (r: any) => ({ ...r, headers: { ...r.headers, ...auth() } }) },
      { method: 'GET', path: '/api/v1/generations?limit=10', setupRequest: (r: any) => ({ ...r, headers: { ...r.headers, ...auth() } }) },
      { method: 'GET', path: '/api/v1/usage', setupRequest: (r: any) => ({ ...r, headers: { ...r.headers, ...auth() } }) },
      { method: 'GET', path: '/api/v1/generations?limit=1&status=completed', setupRequest: (r: any) => ({ ...r, headers: { ...r.headers, ...auth() } }) },
    ],
  } as any) as Promise<any>;
  const t0 = ticks();
  const results = await Promise.all(apis.map((a) => run(a.base)));
  const t1 = ticks();
  sampling = false;
  await sampler;
  const [after] = await sql`select count(*)::int as n from kiln_private.generations`;
  await Promise.all(procs.map(stop));
  await cleanupServers();
  const total = results.reduce((n, r) => n + r.requests.total, 0);
  const weighted = (f: (r: any) => number) => results.reduce((n, r) => n + f(r) * r.requests.total, 0) / Math.max(1, total);
  const generations = after!.n - before!.n;
  const per = (k: keyof typeof t0) => Math.round(((t1[k] - t0[k]) * 1e6) / TICKS_PER_SECOND / Math.max(1, total));
  return {
    seconds,
    rps: Math.round(total / seconds),
    postRps: Math.round(generations / seconds),
    p50: Math.round(weighted((r) => r.latency.p50) * 10) / 10,
    p99: Math.round(weighted((r) => r.latency.p99) * 10) / 10,
    non2xx: results.reduce((n, r) => n + r.non2xx, 0),
    errors: results.reduce((n, r) => n + r.errors + r.timeouts, 0),
    connections: { max: Math.max(...conns), mean: Math.round(conns.reduce((a, b) => a + b, 0) / conns.length), byApp: apps },
    ...(mode === 'pooled' ? { poolSize } : {}),
    oldestJobMs: { max: Math.round(Math.max(...oldest)), mean: Math.round(oldest.reduce((a, b) => a + b, 0) / oldest.length) },
    generations,
    baseline,
    cpuPerRequest: {
      apis: per('apis'), workers: per('workers'), pgbouncer: bouncer ? per('pgbouncer') : null,
      postgres: ctx.meter.postmasterPid ? per('postgres') : null, loadGenerator: per('self'),
    },
    ...(bouncer ? { pgbouncerWaitingMax: waiting } : {}),
  };
}

export async function benchSoak(ctx: BenchContext) {
  if (!PGBOUNCER) throw new Error('soak: pgbouncer is not installed (apt-get install -y pgbouncer)');
  const seconds = Number(process.env.KILN_SOAK_SECONDS ?? 300);
  // On a shared machine, load from elsewhere drifts over minutes: KILN_SOAK_PHASES=pooled,direct,direct,pooled
  // (ABBA) cancels a linear drift; each phase is a soak of its own with fresh processes.
  const phases = (process.env.KILN_SOAK_PHASES ?? 'pooled,direct').split(',').map((x) => x.trim());
  if (!phases.every((p) => p === 'pooled' || p === 'direct')) throw new Error('KILN_SOAK_PHASES: pooled and direct, comma-separated');
  console.log(`\n## Soak: two kiln api and two kiln worker, ${seconds} s per phase: ${phases.join(', ')}`);
  const runs: Array<{ mode: string } & SoakFigures> = [];
  for (const mode of phases as Array<'pooled' | 'direct'>) {
    const f = await soak(ctx, mode, seconds);
    console.log(mode, JSON.stringify(f));
    runs.push({ mode, ...f });
  }
  const mean = (mode: string, f: (r: SoakFigures) => number) => {
    const xs = runs.filter((r) => r.mode === mode).map(f);
    return xs.reduce((a, b) => a + b, 0) / xs.length;
  };
  const throughputRatio = Math.round((mean('pooled', (r) => r.rps) / mean('direct', (r) => r.rps)) * 1000) / 1000;
  const connectionRatio = Math.round((mean('pooled', (r) => r.connections.max) / mean('direct', (r) => r.connections.max)) * 1000) / 1000;
  console.log(`pooled/direct throughput ${throughputRatio} (goal ≥ 0.9), server connections ${connectionRatio} (goal ≤ 0.333)`);
  return { seconds, workerPool: Number(process.env.KILN_SOAK_WORKER_POOL ?? 2), phases: runs, throughputRatio, connectionRatio };
}
