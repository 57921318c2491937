// Benchmark: spend by end user at 10 million charges (docs/usage.md, "Usage by end user and by
// metadata"). One account, 100,000 end users (spend skewed towards a few), 10 million charges in
// one calendar month (last month, so every day is whole), generated in SQL set-based with the
// triggers off and the ledger's secondary indexes dropped and rebuilt, as a restore would; then the
// roll-ups (charge_days and the ones by end user) from `kiln_private.rebuild_charge_days()`. A few
// hundred reservations are left open on the month's last day, so the reads merge them in too.
// Measures, through the real HTTP server, the first page of GET /usage/daily?groupBy=endUser for
// that month and the first page of GET /end-users for it: p50/p99 over 300 sequential requests,
// with auto_explain's plans of the statements inside the SQL functions. Then, on the same ledger,
// POST /generations naming one of those end users with a monthly cap set, against the same POST
// without an end user (rounds interleaved, the queue emptied before each load; no worker).
// `KILN_BENCH_ONLY=endusers npm run bench` runs this section alone; KILN_BENCH_ENDUSERS_SCALE=0.01 for a hundredth.

import postgres from 'postgres';
import { generateKey } from '../../src/auth/secrets.ts';
import { migrateAndSeed } from '../../src/cli/boot.ts';
import { connect, type Sql } from '../../src/db/pool.ts';
import { interleaved, load, pct, startBenchServer, timed, type PairedFigure } from './_env.ts';
import type { BenchContext } from './run.ts';

/** Sequential calls per route: enough that p99 is not simply the slowest call. */
export const END_USERS_RUNS = 300;


export interface EndUsersCase {
  name: string;
  path: string;
  rows: number;
  p50: number;
  p99: number;
  max: number;
  plans: Array<{ ms: number; buffers: string; nodes: string }>;
}

export interface EndUsersFigures {
  scale: number;
  month: { from: string; to: string };
  rows: { charges: number; endUsers: number; open: number; chargeDays: number; endUserDays: number; endUserMonths: number };
  generateSeconds: Record<string, number>;
  cases: EndUsersCase[];
  sizes: Array<{ name: string; mb: number }>;
  /** POST /generations with `endUser` and its cap, against without, on this ledger. */
  post: { without: PairedFigure; capped: PairedFigure; seconds: number };
  /** Sequential calls per route. */
  runs: number;
}

/** Last calendar month (UTC): its first and last day. */
function lastMonth(now = new Date()) {
  const day = (d: Date) => d.toISOString().slice(0, 10);
  return { from: day(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1))), to: day(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 0))) };
}

async function generate(sql: Sql, accountId: string, scale: number, month: { from: string; to: string }, seconds: Record<string, number>) {
  const charges = Math.round(10_000_000 * scale);
  const endUsers = Math.round(100_000 * scale);
  const open = Math.round(500 * Math.max(scale, 0.1));
  const t0 = performance.now();
  await sql.begin(async (tx) => {
    await tx`set local maintenance_work_mem = '512MB'`;
    await tx`set local work_mem = '256MB'`;
    await tx`select setseed(0.42)`;
    // As a restore: no per-row triggers; the roll-ups are derived below.
    await tx`set local session_replication_role = replica`;
    const [{ defs }] = await tx`
      select coalesce(array_agg(pg_get_indexdef(i.indexrelid)), '{}') as defs
      from pg_index i join pg_class c on c.oid = i.indexrelid
      where i.indrelid = 'kiln_private.charges'::regclass
        and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid)`;
    for (const d of defs as string[]) await tx.unsafe(`drop index kiln_private.${/INDEX (\S+) ON/.exec(d)![1]}`);
    // End user n picked with probability skewed towards low n (u²); times uniform over the month;
    // the last `open` charges are reservations still open on the month's last day.
    await timed(`insert ${charges.toLocaleString('en-US')} charges`, seconds, () => tx`
      insert into kiln_private.charges
        (id, account_id, pool_id, period_start, model_id, origin, status, reserved_micros, settled_micros, created_at, finished_at, end_user)
      select kiln_private.uuid_v7(x.at), ${accountId}::uuid, ${accountId}::uuid, kiln_private.period_start(a.period_anchor, x.at),
             (array['local/sketch', 'local/coder', 'local/vector'])[1 + x.i % 3], 'api',
             x.status, x.reserved, case when x.status = 'settled' then (x.reserved * x.r)::bigint end,
             x.at, case when x.status <> 'reserved' then x.at + interval '5 seconds' end,
             'user-' || (1 + least(${endUsers} - 1, floor(${endUsers} * power(x.u, 2)))::int)
      from (select i, random() as u, random() as r, 1000 + (random() * 49000)::bigint as reserved,
                   case when i > ${charges - open} then ${month.to}::date::timestamp at time zone 'UTC' + random() * interval '1 day'
                        else ${month.from}::date::timestamp at time zone 'UTC' + random() * (${month.to}::date + 1 - ${month.from}::date) * interval '1 day' end as at,
                   case when i > ${charges - open} then 'reserved' when random() < 0.05 then 'released' else 'settled' end as status
            from generate_series(1, ${charges}) i) x,
           kiln_private.accounts a
      where a.id = ${accountId}::uuid
      order by x.at`);
    await tx`set local session_replication_role = origin`;
    await timed('build the ledger\'s indexes', seconds, async () => {
      for (const d of defs as string[]) await tx.unsafe(d);
    });
    await timed('budget periods and the roll-ups (rebuild_charge_days) from the ledger', seconds, async () => {
      await tx`delete from kiln_private.budget_periods where pool_id = ${accountId}::uuid`;
      await tx`
        insert into kiln_private.budget_periods (pool_id, period_start, settled_micros, held_micros)
        select pool_id, period_start, coalesce(sum(settled_micros), 0), coalesce(sum(reserved_micros) filter (where status = 'reserved'), 0)
        from kiln_private.charges group by pool_id, period_start`;
      await tx`select kiln_private.rebuild_charge_days()`;
    });
  });
  await timed('vacuum analyze', seconds, () => sql`vacuum analyze`);
  seconds.total = +((performance.now() - t0) / 1000).toFixed(1);
}

/** The plans auto_explain logs for the statements inside one call (LOG notices to the client), summarised. */
async function explain(url: string, call: (sql: Sql) => Promise<unknown>): Promise<EndUsersCase['plans']> {
  const logs: string[] = [];
  const sql = postgres(url, { max: 1, onnotice: (n) => { if (n.message?.includes('duration:')) logs.push(n.message); } }) as unknown as Sql;
  try {
    await sql.begin(async (tx) => {
      await tx`load 'auto_explain'`;
      await tx`set local auto_explain.log_min_duration = 0`;
      await tx`set local auto_explain.log_analyze = on`;
      await tx`set local auto_explain.log_buffers = on`;
      await tx`set local auto_explain.log_nested_statements = on`;
      await tx`set local client_min_messages = log`;
      await call(tx as unknown as Sql);
    });
  } finally {
    await sql.end({ timeout: 5 });
  }
  if (process.env.KILN_BENCH_PLANS) for (const l of logs) console.log(l);
  return logs
    .filter((l) => /Query Text:\s*\n?\s*with open as/.test(l))
    .map((l) => {
      const nodes = [...l.matchAll(/(?:->\s+|^|\n)\s*((?:Index Only Scan|Index Scan|Bitmap Index Scan|Bitmap Heap Scan|Seq Scan|Sort(?! Key| Method)|Limit|Nested Loop|Hash Join|Merge Append|Append|Aggregate|HashAggregate|GroupAggregate|Hash Anti Join|Merge Join)[^(\n]*)/g)]
        .map((m) => m[1]!.trim()).slice(0, 14).join(' → ');
      const b = /Buffers: shared([^\n]*)/.exec(l)?.[1] ?? '';
      return { ms: Number(/duration: ([\d.]+) ms/.exec(l)?.[1] ?? 0), buffers: `shared${b}`.trim(), nodes };
    });
}

export async function benchEndUsers(ctx: BenchContext): Promise<EndUsersFigures> {
  const scale = Number(process.env.KILN_BENCH_ENDUSERS_SCALE ?? 1);
  const name = `kiln_bench_endusers_${process.pid}`;
  await ctx.sql.unsafe(`create database ${name}`);
  const u = new URL(ctx.dbUrl);
  u.pathname = `/${name}`;
  const url = u.toString();
  const sql = connect(url, { max: 4 });
  let server: Awaited<ReturnType<typeof startBenchServer>> | null = null;
  try {
    console.log(`\n## End users: ${Math.round(10_000_000 * scale).toLocaleString('en-US')} charges over ${Math.round(100_000 * scale).toLocaleString('en-US')} end users of one account in one month`);
    await migrateAndSeed(url, { includeCurrent: true });
    const [account] = await sql`select * from kiln.create_account('bench-endusers@example.test', 'enterprise', null, true)`;
    const k = generateKey();
    await sql`select kiln.create_api_key(${account!.id}, ${k.hash}, ${k.displayPrefix}, ${['read', 'write']}, null, null, null)`;
    const month = lastMonth();
    const seconds: Record<string, number> = {};
    await generate(sql, account!.id, scale, month, seconds);
    const [rows] = await sql`select
      (select count(*)::int from kiln_private.charges) as charges,
      (select count(distinct end_user)::int from kiln_private.charge_end_user_months) as end_users,
      (select count(*)::int from kiln_private.charges where status = 'reserved') as open,
      (select count(*)::int from kiln_private.charge_days) as charge_days,
      (select count(*)::int from kiln_private.charge_end_user_days) as end_user_days,
      (select count(*)::int from kiln_private.charge_end_user_months) as end_user_months`;
    console.log(`  rows: ${JSON.stringify(rows)}`);

    server = await startBenchServer(url);
    const base = `http://127.0.0.1:${server.port}/api/v1`;
    const range = `from=${month.from}&to=${month.to}`;
    const cases: Array<{ name: string; path: string; items: (b: any) => number; call: (s: Sql) => Promise<unknown> }> = [
      {
        name: 'GET /usage/daily?groupBy=endUser, a month, first page (100 groups)',
        path: `/usage/daily?${range}&groupBy=endUser`,
        items: (b) => b.groups.length,
        call: (s) => s`select kiln.get_daily_usage_groups(${account!.id}::uuid, null, ${month.from}::date, ${month.to}::date, 'endUser', 100, null, null, null, false)`,
      },
      {
        name: 'GET /end-users, a month, first page (100 end users)',
        path: `/end-users?${range}`,
        items: (b) => b.data.length,
        call: (s) => s`select kiln.list_end_users(${account!.id}::uuid, null, ${month.from}::date, ${month.to}::date, 100, null, null)`,
      },
    ];
    const out: EndUsersCase[] = [];
    for (const c of cases) {
      let body: any;
      const get = async () => {
        const res = await fetch(base + c.path, { headers: { authorization: `Bearer ${k.key}` } });
        if (res.status !== 200) throw new Error(`${c.path}: ${res.status} ${await res.text()}`);
        body = await res.json();
      };
      await get();
      const ms: number[] = [];
      for (let i = 0; i < END_USERS_RUNS; i++) {
        const t = performance.now();
        await get();
        ms.push(performance.now() - t);
      }
      const plans = await explain(url, c.call);
      const r: EndUsersCase = { name: c.name, path: c.path, rows: c.items(body), p50: pct(ms, 0.5), p99: pct(ms, 0.99), max: +Math.max(...ms).toFixed(2), plans };
      out.push(r);
      console.log(`  ${c.name.padEnd(66)} rows ${r.rows}  p50 ${r.p50} ms  p99 ${r.p99} ms  max ${r.max} ms`);
      for (const p of plans) console.log(`      ${p.ms} ms  ${p.nodes}  [${p.buffers}]`);
    }
    // POST /generations on this ledger: an end user with history and a monthly cap, against none.
    await sql`select kiln.set_end_user_budget(${account!.id}::uuid, null::uuid, 'user-1', 1000000000000000::bigint, 'month', null::int)`;
    const postSeconds = Number(process.env.KILN_BENCH_SECONDS ?? 3);
    const postBody = (endUser?: string) => JSON.stringify({ type: 'code', prompt: 'A pricing card with three tiers', targetLanguage: 'tsx', ...(endUser ? { endUser } : {}) });
    const drain = async () => {
      await sql`delete from graphile_worker._private_jobs`;
      await sql`vacuum graphile_worker._private_jobs`;
    };
    const post = (b: string, seconds = postSeconds) => async () => {
      await drain();
      return load({ url: `${base}/generations`, method: 'POST', headers: [{ authorization: `Bearer ${k.key}` }], body: b, seconds });
    };
    await post(postBody(), 1)();
    await post(postBody('user-1'), 1)();
    const posts = await interleaved(Number(process.env.KILN_BENCH_ENDUSER_ROUNDS ?? 5), { without: post(postBody()), capped: post(postBody('user-1')) });
    await drain();
    console.log(`  POST /generations without endUser ${posts.without.median.rps} req/s; with endUser and its cap ${posts.capped.median.rps} req/s: ratio ${posts.capped.ratio}`);
    const sizes = (await sql`
      select c.relname as name, round(pg_relation_size(c.oid) / 1048576.0)::int as mb
      from pg_class c join pg_namespace s on s.oid = c.relnamespace
      where s.nspname = 'kiln_private' and c.relname in ('charges', 'charge_days', 'charge_end_user_days', 'charge_end_user_days_spend_idx',
        'charge_end_user_months', 'charge_end_user_months_spend_idx', 'charge_attribute_days')
      order by c.relname`).map((r) => ({ name: r.name as string, mb: r.mb as number }));
    return {
      scale,
      month,
      rows: {
        charges: rows!.charges, endUsers: rows!.end_users, open: rows!.open, chargeDays: rows!.charge_days,
        endUserDays: rows!.end_user_days, endUserMonths: rows!.end_user_months,
      },
      generateSeconds: seconds,
      cases: out,
      sizes,
      post: { without: posts.without, capped: posts.capped, seconds: postSeconds },
      runs: END_USERS_RUNS,
    };
  } finally {
    if (server) {
      server.child.kill('SIGTERM');
      await new Promise((r) => server!.child.once('exit', r));
    }
    await sql.end({ timeout: 5 });
    if (!process.env.KILN_BENCH_KEEP) await ctx.sql.unsafe(`drop database if exists ${name} with (force)`);
  }
}
