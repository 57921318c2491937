// Benchmark: the admin accounts page (GET /admin/accounts) at 100,000 accounts and 10 million
// charges. Generates, in SQL and set-based, the accounts (anchors spread over a month, so their
// periods roll on different days), about 120,000 keys and the ledger over a year (spend skewed
// towards a few accounts), then the budget periods, the daily roll-up and kiln_private.account_spend
// from it, as a restore would. Measures kiln.admin_list_accounts — the first page, a deep page, the
// last page, and searches narrow and wide — p50/p99 over 50 runs, with EXPLAIN (ANALYZE, BUFFERS)
// of the statements inside it (auto_explain), and the first page over HTTP.
// `KILN_BENCH_ONLY=admin npm run bench` runs this section alone; KILN_BENCH_ADMIN_SCALE=0.01 for a hundredth.

import postgres from 'postgres';
import { generateKey } from '../../src/auth/secrets.ts';
import { migrateAndSeed } from '../../src/cli/boot.ts';
import { connect, type Sql } from '../../src/db/pool.ts';
import { pct, startBenchServer, timed } from './_env.ts';
import type { BenchContext } from './run.ts';

const RUNS = 50;


export interface AdminCase {
  name: string;
  query: string;
  rows: number;
  p50: number;
  p99: number;
  max: number;
  /** What auto_explain logged for the statements inside the function, summarised. */
  plans: Array<{ statement: string; ms: number; buffers: string; nodes: string }>;
}

export interface AdminFigures {
  scale: number;
  rows: { accounts: number; keys: number; charges: number; budgetPeriods: number; chargeDays: number; spending: number };
  generateSeconds: Record<string, number>;
  cases: AdminCase[];
  http: { p50: number; p99: number; n: number };
  sizes: Array<{ name: string; mb: number }>;
}

/** The ledger and its roll-ups, generated set-based (indexes of the ledger dropped and rebuilt). */
async function generate(sql: Sql, scale: number, seconds: Record<string, number>) {
  const accounts = Math.round(100_000 * scale);
  const charges = Math.round(10_000_000 * scale);
  const t0 = performance.now();
  await sql.begin(async (tx) => {
    await tx`set local maintenance_work_mem = '512MB'`;
    await tx`set local work_mem = '256MB'`;
    await tx`select setseed(0.29)`;
    // As a restore: no per-row triggers (audit, roll-ups, spend); everything derived below.
    await tx`set local session_replication_role = replica`;
    await timed(`insert ${accounts.toLocaleString('en-US')} accounts`, seconds, () => tx`
      insert into kiln_private.accounts (id, email, tier, budget_micros, period_anchor, created_at)
      select kiln_private.uuid_v7(now() - make_interval(days => 400 + i % 30) + make_interval(secs => i)),
             'user' || i || '@' || (array['example.test', 'acme.test', 'corp.test', 'mail.test'])[1 + i % 4],
             (array['legacy_free', 'pro', 'enterprise'])[1 + i % 3],
             case when i % 5 = 0 then null else 20000000 end,
             date_trunc('day', now(), 'UTC') - make_interval(days => 400 + i % 30),
             now() - make_interval(days => 400 + i % 30)
      from generate_series(1, ${accounts}) i`);
    await tx`create temp table bench_accounts on commit drop as
      select (row_number() over (order by a.id))::int as n, a.id, a.period_anchor from kiln_private.accounts a
      where a.email like 'user%'`;
    await timed('insert the keys (1 each, 3 for every tenth account)', seconds, () => tx`
      insert into kiln_private.api_keys (account_id, key_hash, display_prefix, scopes, name, revoked_at)
      select b.id, sha256(convert_to(b.id::text || k, 'UTF8')), 'kiln_live_bench', '{read,write}', 'bench ' || k,
             case when k = 3 then now() end
      from bench_accounts b, generate_series(1, 3) k
      where k = 1 or b.n % 10 = 0`);

    const [{ defs }] = await tx`
      select coalesce(array_agg(pg_get_indexdef(i.indexrelid)), '{}') as defs
      from pg_index i join pg_class c on c.oid = i.indexrelid
      where i.indrelid = 'kiln_private.charges'::regclass
        and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid)`;
    for (const d of defs as string[]) await tx.unsafe(`drop index kiln_private.${/INDEX (\S+) ON/.exec(d)![1]}`);
    // Spend skewed towards low-numbered accounts (u³), over the past year; a few reservations still
    // open in the last day.
    await timed(`insert ${charges.toLocaleString('en-US')} charges`, seconds, () => tx`
      insert into kiln_private.charges
        (id, account_id, pool_id, period_start, model_id, origin, status, reserved_micros, settled_micros, created_at, finished_at)
      select kiln_private.uuid_v7(x.at), x.account_id, x.account_id, kiln_private.period_start(x.anchor, x.at),
             (array['local/sketch', 'local/coder', 'local/vector'])[1 + x.i % 3], 'api',
             x.status, x.reserved, case when x.status = 'settled' then (x.reserved * x.r)::bigint end,
             x.at, case when x.status <> 'reserved' then x.at + interval '5 seconds' end
      from (
        -- The account picked here, so the rows sorted below carry scalars, not the arrays.
        select x1.i, x1.at, x1.reserved, x1.r, acc.ids[x1.n] as account_id, acc.anchors[x1.n] as anchor,
               case when x1.status0 <> 'open' then x1.status0 when x1.at > now() - interval '1 day' then 'reserved' else 'settled' end as status
        from (
          select i, 1 + least(${accounts} - 1, floor(${accounts} * power(random(), 3)))::int as n,
                 now() - random() * interval '365 days' as at, 1000 + (random() * 49000)::bigint as reserved, random() as r,
                 case when random() < 0.08 then 'released' when i % 20 = 0 then 'open' else 'settled' end as status0
          from generate_series(1, ${charges}) i) x1,
        (select array_agg(id order by n) as ids, array_agg(period_anchor order by n) as anchors from bench_accounts) acc
        offset 0) x
      order by x.at`);
    await tx`set local session_replication_role = origin`;
    await timed('check the foreign keys', seconds, async () => {
      const [bad] = await tx`select count(*)::int as n from kiln_private.charges c left join kiln_private.accounts a on a.id = c.account_id where a.id is null`;
      if (bad!.n !== 0) throw new Error(`${bad!.n} charges without their account`);
    });
    await timed('build the ledger\'s indexes', seconds, async () => {
      for (const d of defs as string[]) await tx.unsafe(d);
    });
    await timed('budget periods, the daily roll-up and account_spend from the ledger', seconds, async () => {
      await tx`delete from kiln_private.budget_periods`;
      await tx`
        insert into kiln_private.budget_periods (pool_id, period_start, settled_micros, held_micros)
        select pool_id, period_start, coalesce(sum(settled_micros), 0), coalesce(sum(reserved_micros) filter (where status = 'reserved'), 0)
        from kiln_private.charges group by pool_id, period_start`;
      await tx`select kiln_private.rebuild_charge_days()`;
      await tx`select kiln_private.rebuild_account_spend()`;
    });
  });
  await timed('vacuum analyze', seconds, () => sql`vacuum analyze`);
  seconds.total = +((performance.now() - t0) / 1000).toFixed(1);
}

/** Runs `fn` RUNS times (after one warm-up), returning p50/p99/max in ms. */
async function measure(fn: () => Promise<unknown>) {
  await fn();
  const ms: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await fn();
    ms.push(performance.now() - t);
  }
  return { p50: pct(ms, 0.5), p99: pct(ms, 0.99), max: +Math.max(...ms).toFixed(2) };
}

/** The plans auto_explain logs for the statements inside one call, to the client (LOG notices). */
async function explain(url: string, call: (sql: Sql) => Promise<unknown>): Promise<{ summary: AdminCase['plans']; text: string[] }> {
  const logs: string[] = [];
  const sql = postgres(url, { max: 1, onnotice: (n) => { if (n.message?.includes('duration:')) logs.push(n.message); } }) as unknown as Sql;
  try {
    await sql.begin(async (tx) => {
      await tx`load 'auto_explain'`;
      await tx`set local auto_explain.log_min_duration = 0`;
      await tx`set local auto_explain.log_analyze = on`;
      await tx`set local auto_explain.log_buffers = on`;
      await tx`set local auto_explain.log_timing = on`;
      await tx`set local auto_explain.log_nested_statements = on`;
      await tx`set local client_min_messages = log`;
      await call(tx as unknown as Sql);
    });
  } finally {
    await sql.end({ timeout: 5 });
  }
  // One line per distinct plan shape: how often it ran (per-row subqueries run once a row), its
  // total time and its buffers.
  const byShape = new Map<string, { statement: string; calls: number; ms: number; hit: number; read: number }>();
  for (const l of logs) {
    if (/Query Text: select kiln\.admin_list_accounts/.test(l)) continue;
    const nodes = [...l.matchAll(/(?:->\s+|^|\n)\s*((?:Index Only Scan|Index Scan|Bitmap Index Scan|Bitmap Heap Scan|Seq Scan|Sort(?! Key| Method)|Limit|Nested Loop|Hash Join|Merge Append|Append|Aggregate)[^(\n]*)/g)]
      .map((m) => m[1]!.trim().replace(/\s+on\s+\S+(\s+\w+)?$/, '')).slice(0, 8).join(' → ');
    if (!nodes) continue;
    const ms = Number(/duration: ([\d.]+) ms/.exec(l)?.[1] ?? 0);
    const b = /Buffers: shared([^\n]*)/.exec(l)?.[1] ?? '';
    const hit = Number(/hit=(\d+)/.exec(b)?.[1] ?? 0);
    const read = Number(/read=(\d+)/.exec(b)?.[1] ?? 0);
    const q = (/Query Text: ([^\n]*)/.exec(l)?.[1] ?? '').trim().slice(0, 80);
    const e = byShape.get(nodes) ?? { statement: q, calls: 0, ms: 0, hit: 0, read: 0 };
    e.calls++;
    e.ms += ms;
    e.hit += hit;
    e.read += read;
    byShape.set(nodes, e);
  }
  const summary = [...byShape].map(([nodes, e]) => ({
    statement: e.statement,
    ms: +e.ms.toFixed(3),
    buffers: `shared hit=${e.hit}${e.read ? ` read=${e.read}` : ''}`,
    nodes: e.calls > 1 ? `${e.calls}× ${nodes}` : nodes,
  }));
  return { summary, text: logs };
}

export async function benchAdmin(ctx: BenchContext): Promise<AdminFigures> {
  const scale = Number(process.env.KILN_BENCH_ADMIN_SCALE ?? 1);
  const name = `kiln_bench_admin_${process.pid}`;
  await ctx.sql.unsafe(`create database ${name}`);
  const u = new URL(ctx.dbUrl);
  u.pathname = `/${name}`;
  const url = u.toString();
  const sql = connect(url, { max: 4 });
  let server: Awaited<ReturnType<typeof startBenchServer>> | null = null;
  try {
    console.log(`\n## Admin: the accounts page at ${Math.round(100_000 * scale).toLocaleString('en-US')} accounts and ${Math.round(10_000_000 * scale).toLocaleString('en-US')} charges`);
    await migrateAndSeed(url, { includeCurrent: true });
    const seconds: Record<string, number> = {};
    await generate(sql, scale, seconds);
    const [rows] = await sql`select
      (select count(*)::int from kiln_private.accounts) as accounts, (select count(*)::int from kiln_private.api_keys) as keys,
      (select count(*)::int from kiln_private.charges) as charges, (select count(*)::int from kiln_private.budget_periods) as budget_periods,
      (select count(*)::int from kiln_private.charge_days) as charge_days,
      (select count(*)::int from kiln_private.account_spend where used_micros > 0 and period_end > now()) as spending`;
    console.log(`  rows: ${JSON.stringify(rows)}`);

    // Cursors into the order the page uses (spend this period desc, id desc): rank 50,000 and the last page.
    const at = async (rank: number) => {
      const [r] = await sql`select case when period_end > now() then used_micros else 0 end as u, account_id from kiln_private.account_spend
                            order by 1 desc, 2 desc offset ${rank - 1} limit 1`;
      return `${r!.u}.${r!.account_id}`;
    };
    const n = rows!.accounts as number;
    const cases: Array<{ name: string; query: string; args: [number, string | null, string | null] }> = [
      { name: 'first page', query: 'limit=50', args: [50, null, null] },
      { name: `deep page (after rank ${Math.round(n / 2).toLocaleString('en-US')})`, query: 'limit=50&cursor=…', args: [50, await at(Math.round(n / 2)), null] },
      { name: 'last page (after rank ' + (n - 50).toLocaleString('en-US') + ')', query: 'limit=50&cursor=…', args: [50, await at(n - 50), null] },
      { name: 'search, one match', query: 'q=user4242@', args: [50, null, 'user4242@'] },
      { name: 'search, 1,111 matches (ranked alone)', query: 'q=user12', args: [50, null, 'user12'] },
      { name: 'search, a quarter of all accounts (ordered walk)', query: 'q=acme.test', args: [50, null, 'acme.test'] },
      { name: 'search, a quarter, deep page', query: 'q=acme.test&cursor=…', args: [50, null, 'acme.test'] },
      { name: 'search, no match', query: 'q=nobody-at-all', args: [50, null, 'nobody-at-all'] },
    ];
    // The search's deep page: the cursor 40 pages into the acme.test walk.
    {
      let cursor: string | null = null;
      for (let i = 0; i < 40; i++) {
        const parts: string[] = cursor ? cursor.split('.') : [];
        const rows: Array<{ p: { nextCursor: string | null } }> = await sql`select kiln.admin_list_accounts(50, ${parts[0] ?? null}::bigint, ${parts[1] ?? null}::uuid, 'acme.test') as p`;
        cursor = rows[0]!.p.nextCursor;
      }
      cases[6]!.args[1] = cursor;
    }
    const out: AdminCase[] = [];
    for (const c of cases) {
      const [limit, cursor, q] = c.args;
      const [used, id] = cursor ? cursor.split('.') : [null, null];
      const call = (s: Sql) => s`select kiln.admin_list_accounts(${limit}, ${used}::bigint, ${id}::uuid, ${q}::text) as p`;
      const [first] = await call(sql);
      const figures = await measure(() => call(sql));
      const plans = await explain(url, call);
      out.push({ name: c.name, query: c.query, rows: first!.p.data.length, ...figures, plans: plans.summary });
      console.log(`  ${c.name.padEnd(52)} rows ${String(first!.p.data.length).padStart(3)}  p50 ${figures.p50} ms  p99 ${figures.p99} ms  max ${figures.max} ms`);
      for (const p of plans.summary) console.log(`      ${p.ms} ms  ${p.nodes}  [${p.buffers}]`);
      if (process.env.KILN_BENCH_PLANS) for (const t of plans.text) console.log(t);
    }

    // The first page over HTTP: an admin's key, the route's authorization and the same call.
    const [admin] = await sql`select * from kiln.create_account('bench-admin@example.test', 'enterprise', null, true)`;
    await sql`select kiln.set_account_admin(${admin!.id}, true)`;
    const k = generateKey();
    await sql`select kiln.create_api_key(${admin!.id}, ${k.hash}, ${k.displayPrefix}, ${['read', 'admin']}, null, null, null)`;
    server = await startBenchServer(url);
    const base = `http://127.0.0.1:${server.port}/api/v1`;
    const get = async () => {
      const res = await fetch(`${base}/admin/accounts?limit=50`, { headers: { authorization: `Bearer ${k.key}` } });
      if (res.status !== 200) throw new Error(`GET /admin/accounts: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    };
    const http = { ...(await measure(get)), n: RUNS };
    console.log(`  GET /admin/accounts?limit=50 over HTTP: p50 ${http.p50} ms  p99 ${http.p99} ms`);

    const sizes = (await sql`
      select c.relname as name, round(pg_relation_size(c.oid) / 1048576.0)::int as mb
      from pg_class c join pg_namespace s on s.oid = c.relnamespace
      where s.nspname = 'kiln_private' and c.relname in ('account_spend', 'account_spend_used_idx', 'account_spend_roll_idx', 'accounts', 'accounts_email_trgm_idx', 'charges', 'budget_periods', 'charge_days')
      order by c.relname`).map((r) => ({ name: r.name as string, mb: r.mb as number }));
    return {
      scale,
      rows: {
        accounts: rows!.accounts, keys: rows!.keys, charges: rows!.charges, budgetPeriods: rows!.budget_periods,
        chargeDays: rows!.charge_days, spending: rows!.spending,
      },
      generateSeconds: seconds,
      cases: out,
      http,
      sizes,
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
