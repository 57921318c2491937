// Benchmark: batches and lanes (docs/api.md, "Batches"), with a `kiln worker` process (its default
// concurrency, 8) and a zero-latency local code model.
// (a) Accepting a 50,000-line batch: time to the 202 and the API process's peak RSS growth.
// (b) Lines through the worker per second: N batch lines (POST /batches → the batch completed)
//     against N POST /generations from 32 connections (first POST → the last one completed), both
//     from the same account (16 parallel slots, one pool); the POSTs from the 64 bench accounts too.
// (c) Interactive enqueue → `processing` (kiln.generation_timings.queued_ms) for generations
//     posted at a steady rate on an idle queue, then while a 50,000-line batch drains, then — the
//     control — on an idle queue again while busy loops outside Kiln take the cores the drain
//     added (what the machine's CPU alone does to the tail).
// Called by test/bench/run.ts (`KILN_BENCH_ONLY=batches npm run bench` runs this section alone).

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { clusterTicks, cpuTicks, failBacklog, TICKS_PER_SECOND } from './_env.ts';
import { TARGETS } from './_report.ts';
import type { BenchContext } from './run.ts';

export interface BatchFigures {
  accept: { lines: number; megabytes: number; seconds: number; rssGrowthMb: number };
  throughput: {
    lines: number; connections: number; batchSeconds: number; batchPerSecond: number; postSeconds: number; postPerSecond: number; ratio: number; workerConcurrency: number; batchSlots: number;
    /** CPU ms per line, by process: where the time goes. */
    batchCpu: CpuPerLine;
    postCpu: CpuPerLine;
    /** The same POSTs from the 64 bench accounts (pools and slots apart), for reference. */
    spread: { seconds: number; perSecond: number; ratio: number; cpu: CpuPerLine };
  };
  latency: {
    n: number;
    ratePerSecond: number;
    idle: { p50: number; p99: number; max: number };
    draining: { p50: number; p99: number; max: number };
    /**
     * The control: the idle queue again while processes outside Kiln keep busy the cores the
     * drain added (`busyLoopCores`); the machine's busy cores in each run (every process).
     */
    control: { p50: number; p99: number; max: number; busyLoopCores: number };
    cores: { idle: number; draining: number; control: number };
    /** Batch lines that ended while the draining samples were taken, and those still left after. */
    drained: number;
    left: number;
  };
}

interface CpuPerLine { worker: number; postgres: number | null; api: number }

const LINES = Number(process.env.KILN_BENCH_BATCH_LINES ?? 5000);
const BIG = Number(process.env.KILN_BENCH_BIG_BATCH ?? 50_000);
const CONNECTIONS = 32;
const SAMPLES = 300;
const RATE = 50;
const MODEL = 'local/instant';
/** The batch account's parallel slots: twice the worker's concurrency, so that its lanes can keep every worker slot busy. */
const BATCH_SLOTS = 16;
const WORKER_CONCURRENCY = 8;

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return +sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!.toFixed(2);
}
const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: percentile(s, 0.5), p99: percentile(s, 0.99), max: percentile(s, 1) };
};

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

async function startWorkerProcess(dbUrl: string): Promise<ChildProcess> {
  const worker = spawn(process.execPath, [path.resolve(import.meta.dirname, '..', '..', 'bin', 'kiln.js'), 'worker'], {
    env: { ...process.env, DATABASE_URL: dbUrl, KILN_LOG: 'silent', KILN_WORKER_CONCURRENCY: String(WORKER_CONCURRENCY) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    readline.createInterface({ input: worker.stdout! }).on('line', (l) => /worker started/i.test(l) && resolve());
    worker.once('exit', (c) => reject(new Error(`worker exited ${c}`)));
  });
  return worker;
}

/** CPU ticks of the worker, the Postgres cluster (when the bench owns it) and the API process. */
function cpuNow(ctx: BenchContext, worker: ChildProcess) {
  return { worker: cpuTicks(worker.pid!), postgres: ctx.meter.postmasterPid ? clusterTicks(ctx.meter.postmasterPid) : null, api: cpuTicks(ctx.meter.serverPid) };
}
function cpuPerLine(a: ReturnType<typeof cpuNow>, b: ReturnType<typeof cpuNow>, lines: number): CpuPerLine {
  const ms = (t: number) => +((t * 1000) / TICKS_PER_SECOND / lines).toFixed(2);
  return { worker: ms(b.worker - a.worker), postgres: a.postgres === null || b.postgres === null ? null : ms(b.postgres - a.postgres), api: ms(b.api - a.api) };
}

/** The machine's busy CPU ticks (every process: /proc/stat's first line, all but idle and iowait). */
function machineBusy(): number {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return f.reduce((a, b) => a + b, 0) - f[3]! - f[4]!;
}

/** Cores the machine kept busy since `a` (machineBusy at `t0`). */
function coresUsed(a: number, t0: number): number {
  return (machineBusy() - a) / TICKS_PER_SECOND / ((performance.now() - t0) / 1000);
}

/** Processes outside Kiln that keep `cores` of CPU busy (10 ms periods at a duty cycle) until killed. */
function hog(cores: number): ChildProcess[] {
  const n = Math.max(1, Math.ceil(cores));
  const duty = Math.min(1, cores / n);
  const code = `const d = ${duty}; const w = new Int32Array(new SharedArrayBuffer(4));
    for (;;) { const t = Date.now(); while (Date.now() - t < 10 * d); if (d < 1) Atomics.wait(w, 0, 0, 10 * (1 - d)); }`;
  return Array.from({ length: n }, () => spawn(process.execPath, ['-e', code], { stdio: 'ignore' }));
}

function batchBody(n: number, tag: string): string {
  const parts: string[] = [];
  for (let i = 1; i <= n; i++) {
    parts.push(JSON.stringify({ custom_id: `${tag}-${i}`, method: 'POST', url: '/api/v1/generations', body: { type: 'code', prompt: `${tag} line ${i}`, model: MODEL } }));
  }
  return `${parts.join('\n')}\n`;
}

async function postBatch(ctx: BenchContext, key: string, body: string): Promise<string> {
  const res = await fetch(`${ctx.base}/batches`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/jsonl' }, body });
  const json = (await res.json()) as { id: string };
  if (res.status !== 202) throw new Error(`POST /batches → ${res.status} ${JSON.stringify(json).slice(0, 500)}`);
  return json.id;
}

async function batchEnded(ctx: BenchContext, id: string, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const [b] = await ctx.sql`select status from kiln_private.batches where id = ${id}`;
    if (b!.status !== 'in_progress' && b!.status !== 'canceling') return;
    if (Date.now() > end) throw new Error(`batch ${id} did not end within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** SAMPLES interactive POST /generations at RATE per second across the bench keys; their queued_ms once all started. */
async function interactiveLatency(ctx: BenchContext, tag: string): Promise<number[]> {
  const [{ since }] = await ctx.sql`select clock_timestamp() as since`;
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    pending.push(fetch(`${ctx.base}/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.keys[i % ctx.keys.length]}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'code', prompt: `${tag} ${i}`, model: MODEL }),
    }).then((r) => r.arrayBuffer()));
    await new Promise((r) => setTimeout(r, 1000 / RATE));
  }
  await Promise.all(pending);
  const end = Date.now() + 60_000;
  for (;;) {
    const [{ n }] = await ctx.sql`select count(*)::int as n from kiln_private.generations where created_at >= ${since} and batch_id is null and started_at is null`;
    if (n === 0 || Date.now() > end) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const rows = await ctx.sql`select t.queued_ms::float8 as ms from kiln.generation_timings t join kiln_private.generations g using (id)
    where g.created_at >= ${since} and g.batch_id is null and t.queued_ms is not null`;
  return rows.map((r) => r.ms as number);
}

export async function benchBatches(ctx: BenchContext): Promise<BatchFigures> {
  await ctx.sql`select kiln.upsert_model(${ctx.sql.json({
    id: MODEL, name: 'instant', category: 'text', provider: 'local', upstream: { delayMs: 0, stream: false },
    cost: { input_micros_per_token: 1, output_micros_per_token: 1 }, maxOutputTokens: 100, markup: 1,
  })})`;
  await ctx.sql`delete from graphile_worker._private_jobs`;
  await failBacklog(ctx.sql);
  // The batches' account: its own, with room for its lanes to fill the worker.
  const { generateKey } = await import('../../src/auth/secrets.ts');
  const [acct] = await ctx.sql`select * from kiln.create_account(${`bench-batches-${Date.now()}@example.test`}, 'enterprise', null, true)`;
  await ctx.sql`update kiln_private.accounts set parallel_slots = ${BATCH_SLOTS} where id = ${acct!.id}`;
  const k = generateKey();
  await ctx.sql`select kiln.create_api_key(${acct!.id}, ${k.hash}, ${k.displayPrefix}, ${['read', 'write']}, null, null, null)`;
  const key = k.key;

  const worker = await startWorkerProcess(ctx.dbUrl);
  try {
    // Warm-up: the batch route and the worker's code paths.
    await batchEnded(ctx, await postBatch(ctx, key, batchBody(50, 'warm')), 60_000);

    // (b) N POST /generations from 32 connections, until the last one completed: from the batch's
    //     own account and key (the same account, slots and pool as the batch: the ratio), and
    //     from the 64 bench accounts (for reference: their pools and slots are apart)…
    const posts = async (keys: string[]) => {
      const [{ since }] = await ctx.sql`select clock_timestamp() as since`;
      const start = performance.now();
      const cpu0 = cpuNow(ctx, worker);
      let next = 0;
      await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
        for (let i = next++; i < LINES; i = next++) {
          const r = await fetch(`${ctx.base}/generations`, {
            method: 'POST',
            headers: { authorization: `Bearer ${keys[i % keys.length]}`, 'content-type': 'application/json' },
            body: JSON.stringify({ type: 'code', prompt: `post ${i}`, model: MODEL }),
          });
          await r.arrayBuffer();
          if (r.status !== 202) throw new Error(`POST /generations → ${r.status}`);
        }
      }));
      for (;;) {
        const [{ n }] = await ctx.sql`select count(*)::int as n from kiln_private.generations where created_at >= ${since} and batch_id is null and status in ('completed', 'failed')`;
        if (n >= LINES) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      return { seconds: (performance.now() - start) / 1000, cpu: cpuPerLine(cpu0, cpuNow(ctx, worker), LINES) };
    };
    const spread = await posts(ctx.keys);
    const same = await posts([key]);
    const postSeconds = same.seconds;
    const postCpu = same.cpu;
    // …and an N-line batch, until it completed.
    const batchStart = performance.now();
    const batchCpu0 = cpuNow(ctx, worker);
    await batchEnded(ctx, await postBatch(ctx, key, batchBody(LINES, 'throughput')), 600_000);
    const batchSeconds = (performance.now() - batchStart) / 1000;
    const batchCpu = cpuPerLine(batchCpu0, cpuNow(ctx, worker), LINES);

    // (c) Interactive latency on an idle queue.
    const idleCpu0 = machineBusy();
    const idleT0 = performance.now();
    const idle = await interactiveLatency(ctx, 'idle');
    const idleCores = coresUsed(idleCpu0, idleT0);

    // (a) Accepting a BIG-line batch (the worker starts draining it at once).
    const body = batchBody(BIG, 'big');
    const pid = ctx.meter.serverPid;
    await fetch(`${ctx.origin}/bench/live-stats?gc=1`).then((r) => r.arrayBuffer());
    const baseline = rssBytes(pid);
    let peak = baseline;
    const sampler = setInterval(() => { peak = Math.max(peak, rssBytes(pid)); }, 5);
    const acceptStart = performance.now();
    let big: string;
    try {
      big = await postBatch(ctx, key, body);
    } finally {
      clearInterval(sampler);
    }
    const acceptSeconds = (performance.now() - acceptStart) / 1000;
    peak = Math.max(peak, rssBytes(pid));

    // (c) Interactive latency while it drains.
    const [{ before }] = await ctx.sql`select (completed + failed + canceled)::int as before from kiln_private.batches where id = ${big}`;
    const drainCpu0 = machineBusy();
    const drainT0 = performance.now();
    const draining = await interactiveLatency(ctx, 'draining');
    const drainCores = coresUsed(drainCpu0, drainT0);
    const [{ after, total }] = await ctx.sql`select (completed + failed + canceled)::int as after, total from kiln_private.batches where id = ${big}`;
    await ctx.sql`select kiln.cancel_batch(${acct!.id}::uuid, ${big}::uuid)`;
    await batchEnded(ctx, big, 60_000);

    // (c) The control: the same interactive load on an idle queue while processes outside Kiln
    // keep busy the cores the drain added (the machine's busy cores while draining, over the idle run's).
    const hogCores = Math.max(0.1, drainCores - idleCores);
    const hogs = hog(hogCores);
    let hogged: number[];
    const hogCpu0 = machineBusy();
    const hogT0 = performance.now();
    try {
      hogged = await interactiveLatency(ctx, 'hogged');
    } finally {
      for (const h of hogs) h.kill('SIGKILL');
    }
    const hoggedCores = coresUsed(hogCpu0, hogT0);

    const figures: BatchFigures = {
      accept: { lines: BIG, megabytes: +(Buffer.byteLength(body) / 2 ** 20).toFixed(1), seconds: +acceptSeconds.toFixed(2), rssGrowthMb: +((peak - baseline) / 2 ** 20).toFixed(1) },
      throughput: {
        lines: LINES, connections: CONNECTIONS, workerConcurrency: WORKER_CONCURRENCY, batchSlots: BATCH_SLOTS,
        batchSeconds: +batchSeconds.toFixed(2), batchPerSecond: Math.round(LINES / batchSeconds),
        postSeconds: +postSeconds.toFixed(2), postPerSecond: Math.round(LINES / postSeconds),
        ratio: +(postSeconds / batchSeconds).toFixed(2),
        batchCpu, postCpu,
        spread: { seconds: +spread.seconds.toFixed(2), perSecond: Math.round(LINES / spread.seconds), ratio: +(spread.seconds / batchSeconds).toFixed(2), cpu: spread.cpu },
      },
      latency: {
        n: SAMPLES, ratePerSecond: RATE, idle: summary(idle), draining: summary(draining), drained: after - before, left: total - after,
        control: { ...summary(hogged), busyLoopCores: +hogCores.toFixed(2) },
        cores: { idle: +idleCores.toFixed(2), draining: +drainCores.toFixed(2), control: +hoggedCores.toFixed(2) },
      },
    };
    const { accept: a, throughput: t, latency: l } = figures;
    console.log('\n## Batches');
    console.log(`accept ${a.lines} lines (${a.megabytes} MB): 202 in ${a.seconds} s, API peak RSS +${a.rssGrowthMb} MB (goal ≤ ${TARGETS.batchAcceptSeconds} s, ≤ +${TARGETS.batchAcceptMb} MB)`);
    console.log(`${t.lines} lines: batch ${t.batchSeconds} s (${t.batchPerSecond}/s) vs POST /generations from the same account, ${t.connections} connections ${t.postSeconds} s (${t.postPerSecond}/s): ${t.ratio}× (goal ≥ ${TARGETS.batchSpeedup}×)`);
    console.log(`CPU ms per line (worker / Postgres / API): batch ${t.batchCpu.worker} / ${t.batchCpu.postgres} / ${t.batchCpu.api}; POST ${t.postCpu.worker} / ${t.postCpu.postgres} / ${t.postCpu.api}`);
    console.log(`POST /generations from the 64 bench accounts instead: ${t.spread.seconds} s (${t.spread.perSecond}/s): batch ${t.spread.ratio}×; CPU ms per line ${t.spread.cpu.worker} / ${t.spread.cpu.postgres} / ${t.spread.cpu.api}`);
    console.log(`interactive enqueue → processing, idle: p50 ${l.idle.p50} ms, p99 ${l.idle.p99} ms; while a ${BIG}-line batch drains (${l.drained} lines ended meanwhile, ${l.left} left): p50 ${l.draining.p50} ms, p99 ${l.draining.p99} ms (goal p99 ≤ ${TARGETS.batchLatencyFactor}× idle); control, idle queue with ${l.control.busyLoopCores} cores of busy loops: p50 ${l.control.p50} ms, p99 ${l.control.p99} ms (busy cores: idle ${l.cores.idle}, draining ${l.cores.draining}, control ${l.cores.control})`);
    return figures;
  } finally {
    worker.kill('SIGTERM');
    await new Promise((r) => worker.once('exit', r));
    await ctx.sql`delete from graphile_worker._private_jobs`;
    await failBacklog(ctx.sql);
  }
}
