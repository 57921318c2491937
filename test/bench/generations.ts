// Benchmark: POST /generations (accepted/s), GET /generations/{id} (rps), both as ratios to the
// `select 1` route (three rounds, each paired with a `select 1` round run just before it), and
// enqueue → processing latency with the local provider and a real worker.
// Called by test/bench/run.ts (`KILN_BENCH_ONLY=generations npm run bench` runs this section alone).

import autocannon from 'autocannon';
import { loadConfig } from '../../src/config.ts';
import { createContext } from '../../src/context.ts';
import { startWorker } from '../../src/worker/worker.ts';
import { failBacklog, fmt, fmtRounds, interleaved, load, withCpu, type LoadResult, type PairedFigure } from './_env.ts';
import { TARGETS } from './_report.ts';
import type { BenchContext } from './run.ts';

export interface GenerationFigures {
  post: LoadResult;
  get: LoadResult;
  postRatio: number;
  getRatio: number;
  /** req/s of every round; each route round follows its select-1 round. */
  rounds: Record<string, number[]>;
  enqueueToProcessing: { n: number; ratePerSecond: number; p50: number; p99: number; max: number };
  /**
   * POST /generations with the enqueue bypass (kiln_private.enqueue_new_generations: one insert
   * into graphile-worker's jobs table) and with plain graphile_worker.add_jobs, rounds paired
   * like for like (queue drained before each); gain = median of the paired ratios − 1.
   */
  enqueueBypass: { bypass: LoadResult; addJobs: LoadResult; rounds: { bypass: number[]; addJobs: number[] }; gain: number };
}

/** The enqueue of new generations through graphile-worker's public add_jobs: what replaces the bypass. */
const ENQUEUE_VIA_ADD_JOBS = `
create or replace function kiln_private.enqueue_new_generations(p_ids uuid[], p_max_attempts integer)
  returns void language plpgsql volatile set search_path to 'pg_catalog', 'pg_temp'
as $$
begin
  if coalesce(cardinality(p_ids), 0) = 0 then
    return;
  end if;
  perform graphile_worker.add_jobs(array(
    select row('generation__run', json_build_object('id', g), null, null, p_max_attempts::smallint, g::text, null, null)::graphile_worker.job_spec
    from unnest(p_ids) g));
end;
$$`;

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
  const round = Number(process.env.KILN_BENCH_SECONDS ?? 3);
  await loadRotating(ctx.origin, reqs, 1);
  // Each round pairs the route with a `select 1` round run just before it (as the foundation
  // section does), so the ratio compares like with like on a machine whose speed drifts.
  const gets = await interleaved(3, {
    select1: ctx.select1Load,
    get: () => withCpu(ctx.meter, () => loadRotating(ctx.origin, reqs, round), round),
  });

  // POST: accepted per second (each one authorizes, reserves, inserts and enqueues). No worker
  // runs here (its CPU would be charged to the POST rounds and never to their select-1 pairs),
  // so the queue is drained before each pair instead, as a worker that keeps up would leave it:
  // without that, every round would insert into a jobs table (and its indexes) the earlier
  // rounds had grown by ~10,000 rows.
  const drain = async () => {
    await ctx.sql`delete from graphile_worker._private_jobs`;
    await ctx.sql`vacuum graphile_worker._private_jobs`;
  };
  await load({ url: `${ctx.base}/generations`, method: 'POST', headers: auth, body, seconds: 1 });
  const posts = await interleaved(3, {
    select1: async () => {
      await drain();
      return ctx.select1Load();
    },
    post: () => load({ url: `${ctx.base}/generations`, method: 'POST', headers: auth, body, seconds: round, meter: ctx.meter }),
  });
  const get = gets.get.median;
  const post = posts.post.median;

  // The bypass against plain add_jobs, in paired rounds: the function is swapped for the add_jobs
  // rounds only (new transactions see the new definition at once) and always put back.
  const [{ def }] = await ctx.sql`select pg_get_functiondef('kiln_private.enqueue_new_generations(uuid[],integer)'::regprocedure) as def`;
  const postLoad = () => load({ url: `${ctx.base}/generations`, method: 'POST', headers: auth, body, seconds: round, meter: ctx.meter });
  let bypassed: Record<'bypass' | 'addJobs', PairedFigure>;
  try {
    bypassed = await interleaved(3, {
      bypass: async () => {
        await drain();
        return postLoad();
      },
      addJobs: async () => {
        await drain();
        await ctx.sql.unsafe(ENQUEUE_VIA_ADD_JOBS);
        try {
          return await postLoad();
        } finally {
          await ctx.sql.unsafe(def);
        }
      },
    });
  } finally {
    await ctx.sql.unsafe(def);
  }
  // interleaved() gives ratios to its first load; the gain is the bypass over add_jobs.
  const gain = +(1 / bypassed.addJobs.ratio - 1).toFixed(3);

  // Enqueue → processing: drain the POST backlog (no worker ran so far), then start a worker and
  // create generations at a steady rate through the API.
  await ctx.sql`delete from graphile_worker._private_jobs`;
  await failBacklog(ctx.sql);
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
    postRatio: posts.post.ratio,
    getRatio: gets.get.ratio,
    rounds: { select1BeforeGet: gets.select1.rounds, get: gets.get.rounds, select1BeforePost: posts.select1.rounds, post: posts.post.rounds },
    enqueueToProcessing: { n: lat.length, ratePerSecond: rate, p50: percentile(lat, 0.5), p99: percentile(lat, 0.99), max: percentile(lat, 1) },
    enqueueBypass: { bypass: bypassed.bypass.median, addJobs: bypassed.addJobs.median, rounds: { bypass: bypassed.bypass.rounds, addJobs: bypassed.addJobs.rounds }, gain },
  };
  console.log('\n## Generations (ratio to the select-1 route)');
  console.log(`POST /generations ${fmt(post)}   ratio ${figures.postRatio} (target ≥ ${TARGETS.postRatio})`);
  console.log(`GET /generations  ${fmt(get)}   ratio ${figures.getRatio} (target ≥ ${TARGETS.getGenerationRatio})`);
  console.log(fmtRounds({ select1: gets.select1, get: gets.get }));
  console.log(fmtRounds({ select1: posts.select1, post: posts.post }));
  console.log(`POST /generations, enqueue bypass ${fmt(bypassed.bypass.median)} vs graphile_worker.add_jobs ${fmt(bypassed.addJobs.median)}: gain ${(gain * 100).toFixed(1)} % (the bypass stays only at ≥ 10 %)`);
  console.log(fmtRounds(bypassed));
  const e = figures.enqueueToProcessing;
  console.log(`enqueue → processing (local provider, ${e.n} at ${rate}/s): p50 ${e.p50} ms, p99 ${e.p99} ms, max ${e.max} ms (target p50 ≤ ${TARGETS.enqueueP50Ms}, p99 ≤ ${TARGETS.enqueueP99Ms})`);
  return figures;
}
