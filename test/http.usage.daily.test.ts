// GET /usage/daily over HTTP and the ledger rollup behind it: the days add up exactly to GET /usage
// (personal and workspace pools, across a period rollover, with reservations in flight), the
// rollup stays equal to the ledger under concurrent settlements from other processes, and
// kiln.daily_spend keeps its columns and values.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { before, test } from 'node:test';
import { parseDailyRange } from '../src/billing/daily.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

const MIGRATION = path.resolve(import.meta.dirname, '..', 'db', 'migrations', 'committed', '000033-reservations-leave-the-daily-rollup.sql');

let srv: TestServer;
const code = { type: 'code', prompt: 'a card', targetLanguage: 'tsx' };
const image = { type: 'image', prompt: 'a fox' };

async function post(key: string, body: unknown): Promise<string> {
  const res = await api(srv.base, key, '/generations', { body });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return res.body.id;
}

const sum = (days: any[], f: string) => days.reduce((s, d) => s + d[f], 0);
const today = () => new Date().toISOString().slice(0, 10);

/** The old kiln.daily_spend: the ledger grouped directly (what the rollup must equal). */
async function ledgerDailySpend() {
  return srv.db.sql`
    select (created_at at time zone 'UTC')::date::text as day, account_id, workspace_id, key_id, model_id, origin,
           count(*)::int as charges,
           (count(*) filter (where status = 'settled'))::int as settled_charges,
           (count(*) filter (where status = 'released'))::int as released_charges,
           (count(*) filter (where status = 'reserved'))::int as open_reservations,
           coalesce(sum(settled_micros), 0)::bigint::text as spend_micros,
           coalesce(sum(reserved_micros) filter (where status = 'reserved'), 0)::bigint::text as held_micros
    from kiln_private.charges
    group by 1, 2, 3, 4, 5, 6 order by 1, 2, 3, 4, 5, 6`;
}
async function viewDailySpend() {
  return srv.db.sql`
    select day::text, account_id, workspace_id, key_id, model_id, origin, charges::int, settled_charges::int,
           released_charges::int, open_reservations::int, spend_micros::text, held_micros::text
    from kiln.daily_spend order by 1, 2, 3, 4, 5, 6`;
}

/** Settles or fails each generation as the worker would: cost per index, every fourth failed, every fifth left in flight. */
async function settle(ids: string[], cost: (i: number) => number) {
  for (const [i, id] of ids.entries()) {
    if (i % 5 === 4) continue;
    if (i % 4 === 3) await srv.db.sql`select kiln.fail_generation(${id}, 'upstream said no')`;
    else await srv.db.sql`select kiln.complete_generation(${id}, ${srv.db.sql.json({ type: 'code', code: 'x', structuredOutput: null })}, ${cost(i)}, null)`;
  }
}

before(async () => {
  srv = await startServer();
  // No worker: outcomes are settled through the SQL functions the worker uses.
  await srv.db.sql`delete from graphile_worker._private_jobs`;
});

test('a personal key: the current period\'s days add up to used_micros, reservations in flight included', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: 50_000_000 });
  const { key } = await createKey(srv.db.sql, a.id);
  const ids = [];
  for (let i = 0; i < 6; i++) ids.push(await post(key, code));
  for (let i = 0; i < 4; i++) ids.push(await post(key, image));
  await settle(ids, (i) => 10 + i);
  // A fallback settles under another model: the day moves it to the model that made the output.
  const fallback = await post(key, code);
  await srv.db.sql`select kiln.complete_generation(${fallback}, ${srv.db.sql.json({ type: 'code', code: 'x', structuredOutput: null })}, 7, null, 'local/vector')`;

  const usage = await api(srv.base, key, '/usage');
  const daily = await api(srv.base, key, '/usage/daily');
  assert.equal(daily.status, 200, JSON.stringify(daily.body));
  assert.equal(daily.headers.get('cache-control'), 'no-store');
  const [{ start, end }] = await srv.db.sql`
    select to_char(p, 'YYYY-MM-DD') as start, to_char(p + interval '1 month' - interval '1 day', 'YYYY-MM-DD') as "end"
    from (select kiln_private.period_start(period_anchor, now()) at time zone 'UTC' as p from kiln_private.accounts where id = ${a.id}) x`;
  assert.deepEqual({ ...daily.body, days: undefined }, { scope: 'personal', workspace_id: null, from: start, to: end, days: undefined });
  assert.ok(usage.body.used_micros > 0);
  assert.equal(sum(daily.body.days, 'spend_micros'), usage.body.used_micros);
  const [{ held }] = await srv.db.sql`select coalesce(sum(reserved_micros), 0)::int as held from kiln_private.charges where account_id = ${a.id} and status = 'reserved'`;
  assert.ok(held > 0, 'some reservations are still in flight');
  assert.equal(sum(daily.body.days, 'held_micros'), held);
  // Released charges (failed jobs) count nothing; settled and in-flight ones count one each.
  assert.equal(sum(daily.body.days, 'charges'), 11 - 2);
  assert.deepEqual(daily.body.days.map((d: any) => d.model_id).sort(), ['local/coder', 'local/sketch', 'local/vector']);
  for (const d of daily.body.days) assert.deepEqual(Object.keys(d).sort(), ['batch', 'charges', 'day', 'held_micros', 'interactive', 'model_id', 'spend_micros']);
  // No batch here: everything is interactive (test/batches.pricing.test.ts covers batch lines).
  for (const d of daily.body.days) {
    assert.deepEqual(d.batch, { spend_micros: 0, charges: 0, held_micros: 0 });
    assert.deepEqual(d.interactive, { spend_micros: d.spend_micros, charges: d.charges, held_micros: d.held_micros });
  }
  assert.ok(daily.body.days.every((d: any) => d.day === today()));

  // Explicit ranges: today alone, from alone (through today), and a range before any charge.
  const t = today();
  assert.deepEqual((await api(srv.base, key, `/usage/daily?from=${t}&to=${t}`)).body.days, daily.body.days);
  const fromOnly = await api(srv.base, key, `/usage/daily?from=${t}`);
  assert.deepEqual({ from: fromOnly.body.from, to: fromOnly.body.to, days: fromOnly.body.days }, { from: t, to: t, days: daily.body.days });
  assert.deepEqual((await api(srv.base, key, '/usage/daily?from=2020-01-01&to=2020-12-31')).body.days, []);
});

test('a workspace-bound key: the Team pool\'s days (every member) add up to workspace_used_micros; a left member sees none', async () => {
  const owner = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: 50_000_000 });
  const admin = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: 50_000_000 });
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('Studio', ${owner.id})`;
  await srv.db.sql`select kiln.add_workspace_member(${ws.id}, ${admin.id}, 'admin')`;
  await srv.db.sql`select kiln.set_workspace_plan(${ws.id}, 'active', 80000000, true)`;
  const ownerWs = (await createKey(srv.db.sql, owner.id, { workspaceId: ws.id })).key;
  const adminWs = (await createKey(srv.db.sql, admin.id, { workspaceId: ws.id })).key;
  const adminPersonal = (await createKey(srv.db.sql, admin.id)).key;
  const poolIds = [];
  for (let i = 0; i < 5; i++) poolIds.push(await post(ownerWs, image));
  for (let i = 0; i < 5; i++) poolIds.push(await post(adminWs, code));
  await settle(poolIds, (i) => 100 + i);
  const personalIds = [];
  for (let i = 0; i < 4; i++) personalIds.push(await post(adminPersonal, code));
  await settle(personalIds, (i) => 1000 + i);

  for (const key of [ownerWs, adminWs]) {
    const usage = await api(srv.base, key, '/usage');
    const daily = await api(srv.base, key, '/usage/daily');
    assert.equal(daily.status, 200);
    assert.equal(daily.body.scope, 'workspace');
    assert.equal(daily.body.workspace_id, ws.id);
    assert.ok(usage.body.workspace_used_micros > 0);
    assert.equal(sum(daily.body.days, 'spend_micros'), usage.body.workspace_used_micros);
  }
  const personal = await api(srv.base, adminPersonal, '/usage/daily');
  assert.equal(personal.body.scope, 'personal');
  assert.equal(sum(personal.body.days, 'spend_micros'), (await api(srv.base, adminPersonal, '/usage')).body.used_micros);
  assert.ok(sum(personal.body.days, 'spend_micros') >= 3000, 'the personal pool holds only the personal charges');

  // A lapsed plan still shows the pool's history to members; a member who left sees none.
  await srv.db.sql`select kiln.set_workspace_plan(${ws.id}, 'lapsed', null, false)`;
  assert.ok((await api(srv.base, ownerWs, '/usage/daily')).body.days.length > 0);
  await srv.db.sql`select kiln.remove_workspace_member(${ws.id}, ${admin.id})`;
  const left = await api(srv.base, adminWs, '/usage/daily');
  assert.equal(left.status, 200);
  assert.deepEqual(left.body.days, []);
});

test('across a period rollover: each period\'s days add up to that period\'s usage', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: 50_000_000 });
  const { id: keyId, key } = await createKey(srv.db.sql, a.id);
  // The current period began three days ago; the previous one a month before that.
  const [p] = await srv.db.sql`
    update kiln_private.accounts set period_anchor = date_trunc('day', now(), 'UTC') - interval '3 days' - interval '1 month'
    where id = ${a.id}
    returning kiln_private.period_start(period_anchor, now()) as current, period_anchor as previous`;
  // Last period's history, as the ledger holds it: two settled charges, one on its very last
  // microsecond (the day before the current period), one on its first day.
  const history = [
    { at: srv.db.sql`${p.current}::timestamptz - interval '1 microsecond'`, micros: 4_000 },
    { at: srv.db.sql`${p.previous}::timestamptz + interval '1 hour'`, micros: 2_500 },
  ];
  for (const h of history) {
    await srv.db.sql`
      insert into kiln_private.charges (account_id, pool_id, period_start, key_id, model_id, origin, status, reserved_micros, settled_micros, created_at, finished_at)
      values (${a.id}, ${a.id}, ${p.previous}, ${keyId}, 'local/coder', 'api', 'settled', ${h.micros}, ${h.micros}, ${h.at}, ${h.at})`;
  }
  await srv.db.sql`insert into kiln_private.budget_periods (pool_id, period_start, settled_micros) values (${a.id}, ${p.previous}, 6500)`;
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push(await post(key, code));
  await settle(ids, (i) => 20 + i);

  const usage = await api(srv.base, key, '/usage');
  const current = await api(srv.base, key, '/usage/daily');
  const start = (p.current as Date).toISOString().slice(0, 10);
  assert.equal(current.body.from, start);
  assert.equal(sum(current.body.days, 'spend_micros'), usage.body.used_micros);
  assert.ok(current.body.days.every((d: any) => d.day >= start));

  const prevStart = (p.previous as Date).toISOString().slice(0, 10);
  const dayBefore = new Date(Date.parse(start) - 86_400_000).toISOString().slice(0, 10);
  const previous = await api(srv.base, key, `/usage/daily?from=${prevStart}&to=${dayBefore}`);
  assert.equal(sum(previous.body.days, 'spend_micros'), 6500);
  assert.deepEqual(previous.body.days.map((d: any) => [d.day, d.spend_micros]), [[prevStart, 2500], [dayBefore, 4000]]);
  const both = await api(srv.base, key, `/usage/daily?from=${prevStart}`);
  assert.equal(sum(both.body.days, 'spend_micros'), 6500 + usage.body.used_micros);
});

test('a bad range is a 400 invalid_request', async () => {
  const a = await createAccount(srv.db.sql);
  const { key } = await createKey(srv.db.sql, a.id, { scopes: ['read'] });
  const future = new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10);
  for (const [q, name] of [
    ['from=2026-13-01', 'from'], ['from=2026-02-30', 'from'], ['from=26-01-01', 'from'], ['from=yesterday', 'from'], ['from=', 'from'],
    ['from=2026-01-01T00:00:00Z', 'from'], ['from=1969-12-31&to=1970-01-01', 'from'],
    ['from=2026-01-01&to=2026-1-2', 'to'], ['to=2026-01-01', 'from'], ['from=2026-02-01&to=2026-01-31', 'from'],
    ['from=2025-01-01&to=2026-01-02', 'to'], [`from=${future}`, 'from'], ['from=2026-01-01&from=2026-01-02', 'from'],
    ['from=%00', 'from'],
  ]) {
    const res = await api(srv.base, key, `/usage/daily?${q}`);
    assert.equal(res.status, 400, `${q}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error.type, 'invalid_request');
    assert.ok(res.body.error.message.startsWith(`${name}:`), `${q}: ${res.body.error.message}`);
  }
  // The longest range allowed: 366 days, both ends counted (a leap year).
  assert.equal((await api(srv.base, key, '/usage/daily?from=2024-01-01&to=2024-12-31')).status, 200);
  assert.equal((await api(srv.base, null, '/usage/daily')).status, 401);
});

test('from alone: the day checked as today is the day SQL reads to (one clock, so no range is refused inside a batch)', () => {
  const late = new Date('2026-03-01T23:59:59.900Z');
  assert.deepEqual(parseDailyRange({ from: '2026-02-01' }, late), { from: '2026-02-01', to: '2026-03-01' });
  assert.deepEqual(parseDailyRange({ from: '2026-03-01' }, late), { from: '2026-03-01', to: '2026-03-01' });
  assert.deepEqual(parseDailyRange({}, late), { from: null, to: null });
});

test('the rollup stays equal to the ledger under concurrent settlements from other processes', async () => {
  const accounts = [await createAccount(srv.db.sql, { budgetMicros: null }), await createAccount(srv.db.sql, { budgetMicros: null })];
  const keys = await Promise.all(accounts.map((a) => createKey(srv.db.sql, a.id)));
  const ids: string[] = [];
  // Reservations arrive in concurrent bursts (batched into one statement: one rollup upsert).
  for (let r = 0; r < 4; r++) {
    ids.push(...await Promise.all([...Array(30)].map((_, i) => post(keys[i % 2]!.key, i % 3 ? code : image))));
  }
  // Three processes settle, fail and fall back over the same rows at once, while more arrive here.
  const script = `
    import postgres from 'postgres';
    const sql = postgres(process.env.DB, { max: 4, onnotice: () => {} });
    const ids = JSON.parse(process.env.IDS);
    const n = Number(process.env.N);
    await Promise.all(ids.map(async (id, i) => {
      const k = (i + n) % 4;
      if (k === 0) await sql\`select kiln.fail_generation(\${id}, 'no')\`;
      else await sql\`select kiln.complete_generation(\${id}, \${sql.json({ type: 'code', code: 'x', structuredOutput: null })}, \${i % 50}, null, \${k === 3 ? 'local/vector' : null})\`;
    }));
    await sql.end();`;
  const run = (n: number) => new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: path.resolve(import.meta.dirname, '..'),
      env: { ...process.env, DB: srv.db.url, IDS: JSON.stringify(ids), N: String(n) },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('exit', (c) => (c === 0 ? resolve() : reject(new Error(`settler ${n} exited ${c}`))));
  });
  await Promise.all([run(0), run(1), run(2), ...[...Array(20)].map((_, i) => post(keys[i % 2]!.key, code))]);

  const [{ open }] = await srv.db.sql`select count(*)::int as open from kiln_private.charges where generation_id = any (${ids}) and status = 'reserved'`;
  assert.equal(open, 0, 'every generation settled once');
  assert.deepEqual(await viewDailySpend(), await ledgerDailySpend());
  for (const k of keys) {
    const usage = await api(srv.base, k.key, '/usage');
    assert.equal(sum((await api(srv.base, k.key, '/usage/daily')).body.days, 'spend_micros'), usage.body.used_micros);
  }
});

test('kiln.daily_spend keeps its columns (batch_* added after them), and its values are the ledger\'s', async () => {
  const cols = await srv.db.sql`
    select column_name, data_type from information_schema.columns
    where table_schema = 'kiln' and table_name = 'daily_spend' order by ordinal_position`;
  assert.deepEqual(cols.map((c) => `${c.column_name} ${c.data_type}`), [
    'day date', 'account_id uuid', 'workspace_id uuid', 'key_id uuid', 'model_id text', 'origin text',
    'charges bigint', 'settled_charges bigint', 'released_charges bigint', 'open_reservations bigint',
    'spend_micros bigint', 'held_micros bigint',
    // The batch part of each (issue 41), additive.
    'batch_charges bigint', 'batch_settled_charges bigint', 'batch_released_charges bigint', 'batch_open_reservations bigint',
    'batch_spend_micros bigint', 'batch_held_micros bigint',
  ]);
  const rows = await viewDailySpend();
  assert.ok(rows.length > 5);
  assert.deepEqual(rows, await ledgerDailySpend());
  // The rollup holds ended charges only (open reservations are read from the ledger): with it
  // wiped, the view shows just the open ones, and the backfill the migration runs restores it.
  assert.ok(rows.some((r) => r.open_reservations > 0) && rows.some((r) => r.settled_charges > 0));
  await srv.db.sql`delete from kiln_private.charge_days`;
  assert.deepEqual([...await viewDailySpend()], rows.filter((r) => r.open_reservations > 0).map((r) => ({
    ...r, charges: r.open_reservations, settled_charges: 0, released_charges: 0, spend_micros: '0',
  })));
  const [{ n }] = await srv.db.sql`select kiln_private.rebuild_charge_days()::int as n`;
  assert.ok(n > 0);
  assert.deepEqual(await viewDailySpend(), rows);
  // The migration's file calls the same backfill and can be re-run.
  await srv.db.sql`delete from kiln_private.charge_days`;
  await srv.db.sql.begin((tx) => tx.unsafe(fs.readFileSync(MIGRATION, 'utf8')));
  assert.deepEqual(await viewDailySpend(), rows);
});

test('a reservation writes no rollup row (it counts through the ledger until it ends); charge and generation ids are time-ordered UUIDv7', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: 50_000_000 });
  const { key } = await createKey(srv.db.sql, a.id);
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push(await post(key, code));
  const rollup = () => srv.db.sql`select sum(charges)::int as charges, sum(spend_micros)::int as spend from kiln_private.charge_days where pool_id = ${a.id}`;
  assert.deepEqual([...await rollup()], [{ charges: null, spend: null }]);
  let daily = await api(srv.base, key, '/usage/daily');
  assert.equal(sum(daily.body.days, 'charges'), 3);
  assert.equal(sum(daily.body.days, 'spend_micros'), sum(daily.body.days, 'held_micros'));
  await srv.db.sql`select kiln.complete_generation(${ids[0]}, ${srv.db.sql.json({ type: 'code', code: 'x', structuredOutput: null })}, 5, null)`;
  assert.deepEqual([...await rollup()], [{ charges: 1, spend: 5 }]);
  daily = await api(srv.base, key, '/usage/daily');
  assert.equal(sum(daily.body.days, 'charges'), 3);
  assert.equal(sum(daily.body.days, 'spend_micros'), (await api(srv.base, key, '/usage')).body.used_micros);

  // Version 7 (RFC 9562): the version nibble 7, the variant 10, the first 48 bits Unix milliseconds.
  const charges = await srv.db.sql`select id::text, created_at from kiln_private.charges where account_id = ${a.id} order by created_at`;
  for (const c of charges) {
    assert.match(c.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const ms = parseInt(c.id.replaceAll('-', '').slice(0, 12), 16);
    assert.ok(Math.abs(ms - c.created_at.getTime()) < 5_000, `${c.id} carries ${new Date(ms).toISOString()}`);
  }
  assert.deepEqual(charges.map((c) => c.id), charges.map((c) => c.id).sort());
  // Generation ids too (migration 000035): the same version and order, as POST returned them.
  for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.deepEqual(ids, [...ids].sort());
  const [v] = await srv.db.sql`select kiln_private.uuid_v7('2020-01-02T03:04:05.678Z')::text as id`;
  assert.equal(v.id.replaceAll('-', '').slice(0, 12), (Date.parse('2020-01-02T03:04:05.678Z')).toString(16).padStart(12, '0'));
});
