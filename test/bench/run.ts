// `npm run bench`: every benchmark in one run on this machine, printing figures and their
// ratios to the `select 1` route (the one-round-trip limit), and writing the sections it measured
// into BENCH.md (test/bench/_report.ts). Not a test: targets are reported, not enforced.

import { generateKey } from '../../src/auth/secrets.ts';
import { benchDatabase, fmt, fmtRounds, interleaved, load, startBenchServer, type CpuMeter, type LoadResult } from './_env.ts';
import { describeMachine, TARGETS, writeBench, type RunInfo } from './_report.ts';

export interface BenchContext {
  dbUrl: string;
  sql: import('../../src/db/pool.ts').Sql;
  origin: string;
  base: string;
  select1: LoadResult;
  keys: string[];
  accountIds: string[];
  /** CPU accounting for loads against the bench server. */
  meter: CpuMeter;
  /** One round of the `select 1` route, as the foundation measures it (the reference of paired ratios). */
  select1Load(): Promise<LoadResult>;
  report(name: string, figures: Record<string, unknown>): void;
}

const results: Record<string, Record<string, unknown>> = {};

async function main() {
  const started = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const db = await benchDatabase();
  const [{ version }] = await db.sql`select split_part(version(), ' ', 2) as version`;
  const run: RunInfo = {
    started,
    machine: describeMachine(`Postgres ${version} (${process.env.DATABASE_URL ? "DATABASE_URL's server" : 'embedded, fsync=off'})`),
  };
  const { child, port } = await startBenchServer(db.url);
  const origin = `http://127.0.0.1:${port}`;
  const base = `${origin}/api/v1`;
  const meter: CpuMeter = { serverPid: child.pid!, postmasterPid: db.postmasterPid };
  try {
    // 64 keys on 64 accounts, rotated: realistic traffic is many keys, each under its own limits.
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

    // Warm up, then measure the limit and the foundation routes.
    // Same client work for every route (rotating auth headers), so ratios compare servers only.
    // Rounds interleave the routes and the median round counts, so background noise on a
    // shared machine hits every route alike.
    const roundSeconds = Number(process.env.KILN_BENCH_SECONDS ?? 3);
    const select1Load = () => load({ url: `${origin}/bench/select1`, headers: auth, seconds: roundSeconds, meter });
    await load({ url: `${origin}/bench/select1`, headers: auth, seconds: 1 });
    const f = await interleaved(5, {
      select1: select1Load,
      models: () => load({ url: `${base}/models`, headers: auth, seconds: roundSeconds, meter }),
      usage: () => load({ url: `${base}/usage`, headers: auth, seconds: roundSeconds, meter }),
    });
    const select1 = f.select1.median;
    const models = f.models.median;
    const usage = f.usage.median;
    const modelsRatio = f.models.ratio;
    const usageRatio = f.usage.ratio;
    console.log('\n## Foundation (ratio to the select-1 route)');
    console.log(`select 1 route    ${fmt(select1)}`);
    console.log(`GET /models       ${fmt(models)}   ratio ${modelsRatio.toFixed(2)} (target ≥ ${TARGETS.modelsRatio})`);
    console.log(`GET /usage        ${fmt(usage)}   ratio ${usageRatio.toFixed(2)} (target ≥ ${TARGETS.usageRatio})`);
    console.log(fmtRounds(f));
    results.foundation = {
      select1, models, usage,
      rounds: { select1: f.select1.rounds, models: f.models.rounds, usage: f.usage.rounds },
      modelsRatio,
      usageRatio,
    };

    const ctx: BenchContext = {
      dbUrl: db.url, sql: db.sql, origin, base, select1, keys, accountIds, meter, select1Load,
      report(name, figures) { results[name] = figures; },
    };
    // Later modules register here (each prints its own section and reports figures).
    // KILN_BENCH_ONLY=generations,workflows runs just those sections after the foundation
    // (which every ratio needs); KILN_BENCH_ONLY=foundation runs nothing else.
    const only = process.env.KILN_BENCH_ONLY?.split(',').map((x) => x.trim());
    for (const [name, mod] of Object.entries(await benchModules())) {
      if (!only || only.includes(name)) await mod(ctx);
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await db.close();
    // Sections that finished are recorded even when a later one failed.
    if (Object.keys(results).length) console.log(`\nBENCH.md: wrote ${writeBench(results, run).join(', ')}`);
  }
  console.log('\n## JSON');
  console.log(JSON.stringify(results, null, 2));
}

async function benchModules(): Promise<Record<string, (ctx: BenchContext) => Promise<void>>> {
  const { benchModules } = await import('./modules.ts');
  return benchModules;
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
