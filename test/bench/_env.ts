// Benchmark environment: a throwaway embedded Postgres (or DATABASE_URL's server), a migrated
// database, and helpers to run autocannon against loopback servers.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { startEmbedded } from '../../src/db/embedded.ts';
import { migrateAndSeed } from '../../src/cli/boot.ts';
import { connect, type Sql } from '../../src/db/pool.ts';

export interface BenchDb {
  url: string;
  sql: Sql;
  /** The postmaster's pid when the bench started the cluster itself (CPU accounting), else null. */
  postmasterPid: number | null;
  close(): Promise<void>;
}

export async function benchDatabase(): Promise<BenchDb> {
  let stop = async () => {};
  let dataDir: string | null = null;
  let url: string;
  if (process.env.DATABASE_URL) {
    const u = new URL(process.env.DATABASE_URL);
    const name = `kiln_bench_${process.pid}`;
    const admin = postgres(process.env.DATABASE_URL, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    await admin.end();
    u.pathname = `/${name}`;
    url = u.toString();
  } else {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-bench-'));
    const pg = await startEmbedded(dataDir, { fast: true });
    url = pg.url;
    stop = pg.stop;
  }
  await migrateAndSeed(url, { includeCurrent: true });
  const sql = connect(url, { max: 4 });
  let postmasterPid: number | null = null;
  try {
    if (dataDir) postmasterPid = Number(fs.readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]) || null;
  } catch {
    postmasterPid = null;
  }
  return {
    url,
    sql,
    postmasterPid,
    async close() {
      await sql.end({ timeout: 5 });
      await stop();
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Starts a bench server process (test/bench/_server.ts) on `dbUrl`; resolves with its port once it listens. */
export async function startBenchServer(dbUrl: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess; port: number }> {
  // KILN_BENCH_CPU_PROF=<dir>: each bench server writes a V8 CPU profile there when it exits.
  const prof = process.env.KILN_BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.KILN_BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, ['--expose-gc', ...prof, '--import', 'tsx', path.join(import.meta.dirname, '_server.ts')], {
    env: { ...process.env, KILN_BENCH_DB: dbUrl, KILN_LOG: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const rl = readline.createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    rl.once('line', (l) => resolve(JSON.parse(l).port));
    child.once('exit', (c) => reject(new Error(`bench server exited ${c}`)));
  });
  return { child, port };
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** CPU time per request (µs) of the API server, Postgres and this load generator, when measured. */
  cpu?: CpuSplit;
}

export interface CpuSplit {
  node: number;
  postgres: number | null;
  loadGenerator: number;
}

// ---------------------------------------------------------------- CPU accounting (Linux /proc)

export const TICKS_PER_SECOND = 100; // USER_HZ: /proc reports CPU time in these units on Linux

export function cpuTicks(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0; // the process is gone (a backend that exited): its ticks are lost, not fatal
  }
}

/** The postmaster and its children (backends, walwriter, autovacuum…). */
export function clusterTicks(postmasterPid: number): number {
  let total = cpuTicks(postmasterPid);
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.split(') ')[1]!.split(' ')[1]);
      if (ppid === postmasterPid) total += cpuTicks(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return total;
}

/** Whose CPU to count: the API server process and the Postgres cluster (when the bench owns it). */
export interface CpuMeter {
  serverPid: number;
  postmasterPid: number | null;
}

/**
 * Runs a load and adds the CPU time per request spent by the server, Postgres (null when the
 * cluster is not ours) and this process. Unmeasured where /proc is unavailable.
 */
export async function withCpu(meter: CpuMeter | undefined, run: () => Promise<LoadResult>, seconds: number): Promise<LoadResult> {
  if (!meter || !fs.existsSync('/proc/self/stat')) return run();
  const before = { node: cpuTicks(meter.serverPid), pg: meter.postmasterPid ? clusterTicks(meter.postmasterPid) : 0, self: cpuTicks(process.pid) };
  const result = await run();
  const after = { node: cpuTicks(meter.serverPid), pg: meter.postmasterPid ? clusterTicks(meter.postmasterPid) : 0, self: cpuTicks(process.pid) };
  const requests = Math.max(1, result.rps * seconds);
  const perRequest = (ticks: number) => Math.round((ticks * 1e6) / TICKS_PER_SECOND / requests);
  result.cpu = {
    node: perRequest(after.node - before.node),
    postgres: meter.postmasterPid ? perRequest(after.pg - before.pg) : null,
    loadGenerator: perRequest(after.self - before.self),
  };
  return result;
}

/** Drives `url` with autocannon; `headers` rotate round robin across requests when given as a list. */
export async function load(opts: {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Array<Record<string, string>>;
  body?: string;
  connections?: number;
  seconds?: number;
  meter?: CpuMeter;
}): Promise<LoadResult> {
  const seconds = opts.seconds ?? Number(process.env.KILN_BENCH_SECONDS ?? 5);
  return withCpu(opts.meter, () => runLoad({ ...opts, seconds }), seconds);
}

async function runLoad(opts: Parameters<typeof load>[0] & { seconds: number }): Promise<LoadResult> {
  const headerList = opts.headers ?? [{}];
  let i = 0;
  const result = await autocannon({
    url: opts.url,
    method: opts.method ?? 'GET',
    connections: opts.connections ?? 32,
    duration: opts.seconds,
    body: opts.body,
    requests: [
      {
        setupRequest: (req: any) => {
          const h = headerList[i++ % headerList.length];
          return { ...req, headers: { ...req.headers, ...h, ...(opts.body ? { 'content-type': 'application/json' } : {}) } };
        },
      },
    ],
  } as any);
  return {
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

export function fmt(r: LoadResult) {
  const cpu = r.cpu ? `  [CPU µs/req: node ${r.cpu.node}, postgres ${r.cpu.postgres ?? '?'}, load generator ${r.cpu.loadGenerator}]` : '';
  return `${String(r.rps).padStart(7)} req/s  p50 ${String(r.p50).padStart(4)} ms  p99 ${String(r.p99).padStart(4)} ms${r.non2xx ? `  (${r.non2xx} non-2xx!)` : ''}${cpu}`;
}

export interface PairedFigure {
  /** The median round of this load. */
  median: LoadResult;
  /** Median over the rounds of this load's req/s ÷ the reference's req/s in the same round. */
  ratio: number;
  /** req/s of every round, in order. */
  rounds: number[];
}

/**
 * Runs the loads in turn, `rounds` times (interleaved, so background noise on a shared machine
 * hits each alike), and pairs each with the first load (the reference) of the same round.
 */
export async function interleaved<K extends string>(rounds: number, loads: Record<K, () => Promise<LoadResult>>): Promise<Record<K, PairedFigure>> {
  const names = Object.keys(loads) as K[];
  const runs = Object.fromEntries(names.map((n) => [n, [] as LoadResult[]])) as Record<K, LoadResult[]>;
  for (let r = 0; r < rounds; r++) {
    for (const n of names) runs[n].push(await loads[n]());
  }
  return pairedFigures(runs);
}

/** Each load's median round, and its median ratio to the first load (the reference) of the same round. */
export function pairedFigures<K extends string>(runs: Record<K, LoadResult[]>): Record<K, PairedFigure> {
  const names = Object.keys(runs) as K[];
  const mid = <T>(xs: T[]) => xs[Math.floor(xs.length / 2)]!;
  const reference = runs[names[0]!];
  return Object.fromEntries(
    names.map((n) => [
      n,
      {
        median: mid([...runs[n]].sort((a, b) => a.rps - b.rps)),
        ratio: +mid(runs[n].map((x, i) => x.rps / reference[i]!.rps).sort((a, b) => a - b)).toFixed(2),
        rounds: runs[n].map((x) => x.rps),
      },
    ]),
  ) as Record<K, PairedFigure>;
}

/** "name: a, b, c req/s" for every load of an interleaved measurement, one line each. */
export function fmtRounds(figures: Record<string, PairedFigure>): string {
  return Object.entries(figures).map(([name, f]) => `  rounds ${name.padEnd(8)} ${f.rounds.join(', ')} req/s`).join('\n');
}

/**
 * Fails every pending or processing generation (releasing its reservation), 500 per transaction:
 * failing tens of thousands in one statement updated the same budget and rollup rows as many
 * times in one transaction, each update walking the row's growing version chain (quadratic: 72k
 * backlog jobs took over seven minutes).
 */
export async function failBacklog(sql: Sql): Promise<number> {
  let total = 0;
  for (;;) {
    const [{ n }] = await sql<{ n: number }[]>`
      select count(kiln.fail_generation(id, 'benchmark backlog'))::int as n
      from (select id from kiln_private.generations where status in ('pending', 'processing') limit 500) g`;
    total += n;
    if (n === 0) return total;
  }
}

/** The p-th percentile (0–1) of `xs`, nearest rank, to 2 decimals. */
export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return +s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!.toFixed(2);
};

/** Runs `fn`, records its wall time in seconds under `label` in `out`, and prints it. */
export async function timed(label: string, out: Record<string, number>, fn: () => Promise<unknown>) {
  const t = performance.now();
  await fn();
  out[label] = +((performance.now() - t) / 1000).toFixed(1);
  console.log(`  ${label}: ${out[label]} s`);
}
