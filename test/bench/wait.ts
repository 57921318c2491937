// Benchmark: 1,000 concurrent `Prefer: wait` waiters, then 1,000 open event streams, on jobs of
// the local model, each set settled by `kiln worker` as its own process. Reports settlement → response latency
// (from the moment the settling transaction's NOTIFY reaches a listener in this process to the
// moment the waiting response arrives) and the API process's RSS growth per waiter and per stream.
// Called by test/bench/run.ts (`KILN_BENCH_ONLY=wait npm run bench` runs this section alone).

import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import postgres from 'postgres';
import { failBacklog } from './_env.ts';
import { TARGETS } from './_report.ts';
import type { BenchContext } from './run.ts';

export interface WaitFigures {
  waiters: number;
  streams: number;
  /** Settlement (NOTIFY heard here) → waiting GET answered, ms. */
  waitLatency: { p50: number; p99: number; max: number };
  /** Settlement → the stream's terminal event received, ms. */
  streamLatency: { p50: number; p99: number; max: number };
  /** finished_at (the settling transaction's start, database clock) → waiting GET answered, ms. */
  finishedToResponse: { p50: number; p99: number };
  /** API process RSS growth, KB per open waiter / per open stream. */
  rssPerWaiterKb: number;
  rssPerStreamKb: number;
  /** Growth of the JS heap plus external memory (after a GC), KB per open waiter / per open stream. */
  heapPerWaiterKb: number;
  heapPerStreamKb: number;
  /** Seconds the worker needed to settle the waiters' jobs, and the streams' jobs. */
  settleSeconds: number;
  streamSettleSeconds: number;
}

const N = Number(process.env.KILN_BENCH_WAITERS ?? 1000);

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
  return +sorted[idx]!.toFixed(2);
}
const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: percentile(s, 0.5), p99: percentile(s, 0.99), max: percentile(s, 1) };
};

async function liveStats(ctx: BenchContext, gc = false): Promise<{ watchers: number; rss: number; heap: number }> {
  return (await fetch(`${ctx.origin}/bench/live-stats${gc ? '?gc=1' : ''}`)).json() as Promise<{ watchers: number; rss: number; heap: number }>;
}

async function settle(ctx: BenchContext, pred: (s: { watchers: number; rss: number; heap: number }) => boolean): Promise<{ watchers: number; rss: number; heap: number }> {
  const end = Date.now() + 60_000;
  for (;;) {
    const s = await liveStats(ctx);
    if (pred(s)) return liveStats(ctx, true);
    if (Date.now() > end) throw new Error(`live stats never settled: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

type Job = { id: string; h: Record<string, string> };

/** Starts a `kiln worker` process, waits for every promise, stops it; returns the seconds it ran. */
async function settleWithWorker(ctx: BenchContext, work: () => Array<Promise<unknown>>): Promise<number> {
  const worker = spawn(process.execPath, [path.resolve(import.meta.dirname, '..', '..', 'bin', 'kiln.js'), 'worker'], {
    env: { ...process.env, DATABASE_URL: ctx.dbUrl, KILN_LOG: 'silent' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const up = Date.now();
  await new Promise<void>((resolve, reject) => {
    readline.createInterface({ input: worker.stdout! }).on('line', (l) => /worker started/i.test(l) && resolve());
    worker.once('exit', (c) => reject(new Error(`worker exited ${c}`)));
  });
  try {
    await Promise.all(work());
  } finally {
    worker.kill('SIGTERM');
    await new Promise((r) => worker.once('exit', r));
  }
  return +((Date.now() - up) / 1000).toFixed(1);
}

export async function benchWait(ctx: BenchContext): Promise<WaitFigures> {
  const auth = ctx.keys.map((k) => ({ authorization: `Bearer ${k}` }));
  // fetch's default agent opens one socket per concurrent request: one per waiter and per stream.
  const body = JSON.stringify({ type: 'code', prompt: 'wait bench', targetLanguage: 'tsx' });
  // No worker runs yet: every job stays pending until a worker starts.
  await ctx.sql`delete from graphile_worker._private_jobs`;
  await failBacklog(ctx.sql);
  const create = async (count: number) => {
    const out: Job[] = [];
    for (let i = 0; i < count; i += 100) {
      out.push(...(await Promise.all(Array.from({ length: Math.min(100, count - i) }, async (_, j) => {
        const h = auth[(i + j) % auth.length]!;
        const r = await fetch(`${ctx.base}/generations`, { method: 'POST', headers: { ...h, 'content-type': 'application/json' }, body });
        return { id: ((await r.json()) as { id: string }).id, h };
      }))));
    }
    return out;
  };
  // Warm-up: the hub's listening connection, the stream code paths, sockets.
  const warm = await create(20);
  await Promise.all(warm.map((g) => fetch(`${ctx.base}/generations/${g.id}`, { headers: { ...g.h, prefer: 'wait=1' } }).then((r) => r.arrayBuffer())));

  // Notifications as this process hears them: the settlement instant of each job.
  const heard = new Map<string, number>();
  const listener = postgres(ctx.dbUrl, { max: 1, onnotice: () => {} });
  await listener.listen('kiln_status', (payload) => {
    const n = JSON.parse(payload);
    if (n.k === 'generation' && (n.s === 'completed' || n.s === 'failed') && !heard.has(n.id)) heard.set(n.id, performance.now());
  });

  try {
    // Phase 1: N waiters, settled by a worker (what the target is about).
    const waitJobs = await create(N);
    const before = await settle(ctx, (s) => s.watchers === 0);
    const answered = new Map<string, number>();
    const waits = waitJobs.map((g) =>
      fetch(`${ctx.base}/generations/${g.id}`, { headers: { ...g.h, prefer: 'wait=60' } })
        .then(async (r) => {
          const b = (await r.json()) as { status: string };
          answered.set(g.id, performance.now());
          if (b.status !== 'completed') throw new Error(`waiter answered ${b.status}`);
        }));
    const withWaiters = await settle(ctx, (s) => s.watchers >= N);
    const waitSeconds = await settleWithWorker(ctx, () => waits);

    // Phase 2: N event streams, settled by a worker.
    const streamJobs = await create(N);
    const beforeStreams = await settle(ctx, (s) => s.watchers === 0);
    const terminal = new Map<string, number>();
    const streams = streamJobs.map(async (g) => {
      const r = await fetch(`${ctx.base}/generations/${g.id}/events`, { headers: g.h });
      if (r.status !== 200) throw new Error(`stream answered ${r.status}`);
      const decoder = new TextDecoder();
      let text = '';
      for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
        text += decoder.decode(chunk, { stream: true });
        if (!terminal.has(g.id) && text.includes('id: 3\n')) terminal.set(g.id, performance.now());
      }
    });
    const withStreams = await settle(ctx, (s) => s.watchers >= N);
    const streamSeconds = await settleWithWorker(ctx, () => streams);

    const lag = (m: Map<string, number>, jobs: Job[]) => jobs.map((g) => m.get(g.id)! - heard.get(g.id)!).filter(Number.isFinite);
    const rows = await ctx.sql`select id, extract(epoch from finished_at) * 1000 as ms from kiln_private.generations where id = any(${waitJobs.map((g) => g.id)}::uuid[])`;
    const finished = new Map(rows.map((r) => [r.id as string, Number(r.ms)]));
    // performance.now() → wall clock, for the comparison with finished_at.
    const wallOffset = Date.now() - performance.now();
    const fromFinished = waitJobs.map((g) => answered.get(g.id)! + wallOffset - finished.get(g.id)!).sort((a, b) => a - b);

    const figures: WaitFigures = {
      waiters: N,
      streams: N,
      waitLatency: summary(lag(answered, waitJobs)),
      streamLatency: summary(lag(terminal, streamJobs)),
      finishedToResponse: { p50: percentile(fromFinished, 0.5), p99: percentile(fromFinished, 0.99) },
      rssPerWaiterKb: +((withWaiters.rss - before.rss) / N / 1024).toFixed(1),
      rssPerStreamKb: +((withStreams.rss - beforeStreams.rss) / N / 1024).toFixed(1),
      heapPerWaiterKb: +((withWaiters.heap - before.heap) / N / 1024).toFixed(1),
      heapPerStreamKb: +((withStreams.heap - beforeStreams.heap) / N / 1024).toFixed(1),
      settleSeconds: waitSeconds,
      streamSettleSeconds: streamSeconds,
    };
    console.log('\n## Wait and live events');
    console.log(`${N} waiters (GET Prefer: wait=60), settled by a kiln worker process in ${waitSeconds} s; then ${N} event streams, settled in ${streamSeconds} s`);
    console.log(`settlement → waiting response: p50 ${figures.waitLatency.p50} ms, p99 ${figures.waitLatency.p99} ms, max ${figures.waitLatency.max} ms (target p50 ≤ ${TARGETS.waitP50Ms}, p99 ≤ ${TARGETS.waitP99Ms})`);
    console.log(`settlement → stream's terminal event: p50 ${figures.streamLatency.p50} ms, p99 ${figures.streamLatency.p99} ms, max ${figures.streamLatency.max} ms`);
    console.log(`finished_at → waiting response: p50 ${figures.finishedToResponse.p50} ms, p99 ${figures.finishedToResponse.p99} ms`);
    console.log(`API RSS growth (after GC): ${figures.rssPerWaiterKb} KB per waiter, ${figures.rssPerStreamKb} KB per stream (goal ≤ ${TARGETS.waiterKb} KB each)`);
    console.log(`API heap + external growth (after GC): ${figures.heapPerWaiterKb} KB per waiter, ${figures.heapPerStreamKb} KB per stream`);
    return figures;
  } finally {
    await listener.end();
  }
}
