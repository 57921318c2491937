// Benchmark (issue 42, "Budgets per end user"): POST /generations naming an end user with a cap
// set, against the same POST without an end user; also with an end user without a cap, and with a
// cap and an rpm. Rounds interleave the four (the reference first in each), the queue drained
// before each load, and each ratio is the median of the per-round ratios to the reference.
// Called by test/bench/run.ts (`KILN_BENCH_ONLY=enduser-post npm run bench` runs this section alone).

import { failBacklog, fmt, fmtRounds, interleaved, load, type LoadResult } from './_env.ts';
import type { BenchContext } from './run.ts';

/** POST /generations with endUser and a budget set, against without: within this share (issue 42). */
export const END_USER_POST_TARGET = 0.1;

export interface EndUserPostFigures {
  without: LoadResult;
  endUser: LoadResult;
  capped: LoadResult;
  cappedRpm: LoadResult;
  /** Ratios of req/s to `without` (median of the rounds' ratios). */
  ratios: { endUser: number; capped: number; cappedRpm: number };
  rounds: Record<'without' | 'endUser' | 'capped' | 'cappedRpm', number[]>;
  /** Postgres CPU per request (µs) of the median rounds. */
  postgresUs: Record<'without' | 'endUser' | 'capped' | 'cappedRpm', number | null>;
  roundCount: number;
  seconds: number;
}

export async function benchEndUserPost(ctx: BenchContext, opts: { rounds?: number } = {}): Promise<EndUserPostFigures> {
  const auth = ctx.keys.map((k) => ({ authorization: `Bearer ${k}` }));
  const prompt = 'A pricing card with three tiers';
  const body = (endUser?: string) => JSON.stringify({ type: 'code', prompt, targetLanguage: 'tsx', ...(endUser ? { endUser } : {}) });
  // Every bench account caps the same two end user ids (one row per account: no more contention
  // than the account's own pool row), large enough never to refuse.
  for (const id of ctx.accountIds) {
    await ctx.sql`select kiln.set_end_user_budget(${id}::uuid, null::uuid, 'bench-capped', 1000000000000000::bigint, 'month', null::int)`;
    await ctx.sql`select kiln.set_end_user_budget(${id}::uuid, null::uuid, 'bench-rpm', 1000000000000000::bigint, 'month', 1000000)`;
  }
  const round = Number(process.env.KILN_BENCH_SECONDS ?? 3);
  const rounds = opts.rounds ?? Number(process.env.KILN_BENCH_ENDUSER_ROUNDS ?? 5);
  const drain = async () => {
    await ctx.sql`delete from graphile_worker._private_jobs`;
    await ctx.sql`vacuum graphile_worker._private_jobs`;
  };
  const post = (b: string) => async () => {
    await drain();
    return load({ url: `${ctx.base}/generations`, method: 'POST', headers: auth, body: b, seconds: round, meter: ctx.meter });
  };
  // Warm every path once (plans, caches).
  for (const b of [body(), body('bench-free'), body('bench-capped'), body('bench-rpm')]) {
    await load({ url: `${ctx.base}/generations`, method: 'POST', headers: auth, body: b, seconds: 1 });
  }
  const r = await interleaved(rounds, {
    without: post(body()),
    endUser: post(body('bench-free')),
    capped: post(body('bench-capped')),
    cappedRpm: post(body('bench-rpm')),
  });
  await drain();
  await failBacklog(ctx.sql);
  const figures: EndUserPostFigures = {
    without: r.without.median,
    endUser: r.endUser.median,
    capped: r.capped.median,
    cappedRpm: r.cappedRpm.median,
    ratios: { endUser: r.endUser.ratio, capped: r.capped.ratio, cappedRpm: r.cappedRpm.ratio },
    rounds: { without: r.without.rounds, endUser: r.endUser.rounds, capped: r.capped.rounds, cappedRpm: r.cappedRpm.rounds },
    postgresUs: {
      without: r.without.median.cpu?.postgres ?? null, endUser: r.endUser.median.cpu?.postgres ?? null,
      capped: r.capped.median.cpu?.postgres ?? null, cappedRpm: r.cappedRpm.median.cpu?.postgres ?? null,
    },
    roundCount: rounds,
    seconds: round,
  };
  console.log('\n## POST /generations with an end user and its budget (ratio to the same POST without an end user)');
  console.log(`without endUser           ${fmt(figures.without)}`);
  console.log(`endUser, no cap           ${fmt(figures.endUser)}   ratio ${figures.ratios.endUser}`);
  console.log(`endUser with a budget     ${fmt(figures.capped)}   ratio ${figures.ratios.capped} (target ≥ ${1 - END_USER_POST_TARGET})`);
  console.log(`endUser, budget and rpm   ${fmt(figures.cappedRpm)}   ratio ${figures.ratios.cappedRpm}`);
  console.log(fmtRounds(r));
  return figures;
}

/** BENCH.md's section (test/bench/_report.ts renders it with this). */
export function renderEndUserPost(f: Record<string, any>): string[] {
  const g = f as EndUserPostFigures;
  const row = (name: string, x: LoadResult, ratio: string, pg: number | null) =>
    `| ${name} | ${x.rps} | ${x.p50} / ${x.p99} | ${ratio} | ${pg ?? '?'} |${x.non2xx ? ` ${x.non2xx} non-2xx` : ''}`;
  const met = g.ratios.capped >= 1 - END_USER_POST_TARGET;
  return [
    '## End users: POST /generations with an end user and its budget (issue 42)',
    '',
    `64 bench accounts and keys, rotated; 32 connections; ${g.roundCount} rounds of ${g.seconds} s, each loading the four bodies in turn (the job queue emptied before each load; no worker). ` +
      'Each ratio is the median of the rounds\' ratios of accepted req/s to the POST without an end user of the same round. ' +
      'The capped end users (`bench-capped`, `bench-rpm`) have a cap in every bench account, large enough never to refuse; `bench-rpm` also an rpm of 1,000,000 (a GCRA bucket consumed per request).',
    '',
    '| body | req/s | p50 / p99 ms | ratio to without | Postgres µs/req |',
    '|---|---|---|---|---|',
    row('without `endUser`', g.without, '1', g.postgresUs.without),
    row('`endUser`, no cap', g.endUser, String(g.ratios.endUser), g.postgresUs.endUser),
    row('`endUser` with a budget', g.capped, String(g.ratios.capped), g.postgresUs.capped),
    row('`endUser` with a budget and an rpm', g.cappedRpm, String(g.ratios.cappedRpm), g.postgresUs.cappedRpm),
    '',
    `Target (issue 42): with \`endUser\` and a budget set, within ${END_USER_POST_TARGET * 100} % of without: **${met ? 'met' : 'missed'}** (${((g.ratios.capped - 1) * 100).toFixed(1)} %). ` +
      `Rounds (req/s): without ${g.rounds.without.join(', ')}; no cap ${g.rounds.endUser.join(', ')}; budget ${g.rounds.capped.join(', ')}; budget and rpm ${g.rounds.cappedRpm.join(', ')}.`,
  ];
}
