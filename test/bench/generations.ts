// Benchmark: POST /generations (accepted/s), GET /generations/{id} (rps), both as ratios to the
// `select 1` route, and enqueue → processing latency with the local provider and a real worker.
// Called by test/bench/run.ts; also runnable alone: `node --import tsx test/bench/generations.ts`.

import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import autocannon from 'autocannon';
import { loadConfig } from '../../src/config.ts';
import { createContext } from '../../src/context.ts';
import { generateKey } from '../../src/keys.ts';
import { startWorker } from '../../src/worker.ts';
import { benchDatabase, fmt, load, type LoadResult } from './_env.ts';
import type { BenchContext } from './run.ts';

export interface GenerationFigures {
  post: LoadResult;
  get: LoadResult;
  postRatio: number;
  getRatio: number;
  enqueueToProcessing: { n: number; p50: number; p99: number; max: number };
}

const seconds = () => Number(process.env.KILN_BENCH_SECONDS ?? 5);

/** autocannon with (path, headers) pairs rotated round robin. */
async function loadRotating(origin: string, reqs: Array<{ path: string; headers: Record<string, string> }>, duration = seconds()): Promise<LoadResult> {
  let i = 0;
  const result = await autocannon({
    url: origin,
    connections: 32,
    duration,
    requests: [
      {
        setupRequest: (req: any) => {
          const r = reqs[i++ % reqs.length]!;
          return { ...req, method: 'GET', path: r.path, headers: { ...req.headers, ...r.headers } };
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

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
  return +sorted[idx]!.toFixed(2);
}

export async function benchGenerations(ctx: BenchContext, opts: { latencySamples?: number; ratePerSecond?: number } = {}): Promise<GenerationFigures> {
  const auth = ctx.keys.map((k) => ({ authorization: `Bearer ${k}` }));
  const body = JSON.stringify({ type: 'code', prompt: 'A pricing card with three tiers', targetLanguage: 'tsx' });

  // GET first (before the write-heavy POST phase leaves vacuum and checkpoint work behind):
  // one generation per key, each polled by its owner.
  const ids = await Promise.all(
    auth.map(async (h) => {
      const r = await fetch(`${ctx.base}/generations`, { method: 'POST', headers: { ...h, 'content-type': 'application/json' }, body });
      return ((await r.json()) as { id: string }).id;
    }),
  );
  const reqs = ids.map((id, i) => ({ path: `/api/v1/generations/${id}`, headers: auth[i]! }));
  await loadRotating(ctx.origin, reqs, 1);
  const get = await loadRotating(ctx.origin, reqs);

  // POST: accepted per second (each one authorizes, reserves, inserts and enqueues).
  await load({ url: `${ctx.base}/generations`, method: 'POST', headers: auth, body, seconds: 1 });
  const post = await load({ url: `${ctx.base}/generations`, method: 'POST', headers: auth, body });

  // Enqueue → processing: drain the POST backlog (no worker ran so far), then start a worker and
  // create generations at a steady rate through the API.
  await ctx.sql`delete from graphile_worker._private_jobs`;
  await ctx.sql`select count(kiln.fail_generation(id, 'benchmark backlog')) from kiln_private.generations where status in ('pending', 'processing')`;
  const [{ since }] = await ctx.sql`select now() as since`;
  const config = { ...loadConfig(), logLevel: 'silent' };
  const wctx = createContext(config, ctx.sql);
  const worker = await startWorker(wctx, ctx.dbUrl);
  const samples = opts.latencySamples ?? 300;
  const rate = opts.ratePerSecond ?? 50;
  try {
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < samples; i++) {
      pending.push(
        fetch(`${ctx.base}/generations`, { method: 'POST', headers: { ...auth[i % auth.length], 'content-type': 'application/json' }, body })
          .then((r) => r.arrayBuffer()),
      );
      await new Promise((r) => setTimeout(r, 1000 / rate));
    }
    await Promise.all(pending);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const [{ n }] = await ctx.sql`select count(*)::int as n from kiln_private.generations where created_at >= ${since} and started_at is null`;
      if (n === 0 || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await worker.stop();
  }
  const rows = await ctx.sql`
    select queued_ms::float8 as ms from kiln.generation_timings where created_at >= ${since} and queued_ms is not null order by 1`;
  const lat = rows.map((r) => r.ms as number);
  const figures: GenerationFigures = {
    post,
    get,
    postRatio: +(post.rps / ctx.select1.rps).toFixed(2),
    getRatio: +(get.rps / ctx.select1.rps).toFixed(2),
    enqueueToProcessing: { n: lat.length, p50: percentile(lat, 0.5), p99: percentile(lat, 0.99), max: percentile(lat, 1) },
  };
  console.log('\n## Generations (ratio to the select-1 route)');
  console.log(`POST /generations ${fmt(post)}   ratio ${figures.postRatio} (target ≥ 0.5)`);
  console.log(`GET /generations  ${fmt(get)}   ratio ${figures.getRatio} (target ≥ 0.8)`);
  const e = figures.enqueueToProcessing;
  console.log(`enqueue → processing (local provider, ${e.n} at ${rate}/s): p50 ${e.p50} ms, p99 ${e.p99} ms, max ${e.max} ms (target p50 ≤ 10, p99 ≤ 50)`);
  return figures;
}

// ---------------------------------------------------------------- standalone

async function standalone() {
  const db = await benchDatabase();
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, '_server.ts')], {
    env: { ...process.env, KILN_BENCH_DB: db.url, KILN_LOG: 'silent' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      readline.createInterface({ input: child.stdout! }).once('line', (l) => resolve(JSON.parse(l).port));
      child.once('exit', (c) => reject(new Error(`bench server exited ${c}`)));
    });
    const origin = `http://127.0.0.1:${port}`;
    const keys: string[] = [];
    const accountIds: string[] = [];
    for (let i = 0; i < 64; i++) {
      const [a] = await db.sql`select * from kiln.create_account(${`bench${i}@example.test`}, 'enterprise', null, true)`;
      const k = generateKey();
      await db.sql`select kiln.create_api_key(${a.id}, ${k.hash}, ${k.displayPrefix}, ${['read', 'write']}, null, null, null)`;
      keys.push(k.key);
      accountIds.push(a.id);
    }
    const auth = keys.map((k) => ({ authorization: `Bearer ${k}` }));
    await load({ url: `${origin}/bench/select1`, headers: auth, seconds: 1 });
    const select1 = await load({ url: `${origin}/bench/select1`, headers: auth });
    console.log(`select 1 route    ${fmt(select1)}`);
    const figures = await benchGenerations({
      dbUrl: db.url, sql: db.sql, origin, base: `${origin}/api/v1`, select1, keys, accountIds, report() {},
    });
    console.log(JSON.stringify({ select1, ...figures }, null, 2));
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await db.close();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  standalone().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
