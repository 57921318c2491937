// Spend read back by end user and by metadata (docs/usage.md, "Usage by end user and by metadata"):
// GET /usage/daily?groupBy= (groups that add up exactly to each day's total, the null group
// included, keyset pages without loss or repeat), GET /end-users (order, paging, both read paths),
// validation, isolation across accounts and pools, the roll-ups against the ledger (kept by the
// triggers and rebuilt alike), and kiln.usage_by_end_user.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

let srv: TestServer;
const code = { type: 'code', prompt: 'a card', targetLanguage: 'tsx' };

async function post(key: string, extra: Record<string, unknown>): Promise<string> {
  const res = await api(srv.base, key, '/generations', { body: { ...code, ...extra } });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return res.body.id;
}

async function complete(id: string, cost: number) {
  await srv.db.sql`select kiln.complete_generation(${id}, ${srv.db.sql.json({ type: 'code', code: 'x', structuredOutput: null })}, ${cost}, null)`;
}

/** Moves a generation's charge back `days` UTC days (an update the roll-up triggers follow). */
async function backdate(id: string, days: number) {
  await srv.db.sql`update kiln_private.charges set created_at = created_at - make_interval(days => ${days}) where generation_id = ${id}`;
}

const today = () => new Date().toISOString().slice(0, 10);
const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);

/** Every group of every page, following next_cursor. */
async function allGroups(key: string, query: string, limit: number) {
  const rows: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  let first: any;
  do {
    const res = await api(srv.base, key, `/usage/daily?${query}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.ok(res.body.groups.length <= limit);
    first ??= res.body;
    rows.push(...res.body.groups);
    cursor = res.body.next_cursor;
    pages++;
    assert.ok(pages < 500, 'paging does not end');
  } while (cursor);
  return { rows, pages, first };
}

/** What the groups must be, straight from the ledger: per day and group, as the days count charges. */
async function ledgerGroups(pool: string, groupExpr: 'end_user' | string, from: string, to: string) {
  const grp = groupExpr === 'end_user' ? srv.db.sql`end_user` : srv.db.sql`metadata->>${groupExpr}`;
  const rows = await srv.db.sql`
    select (created_at at time zone 'UTC')::date::text as day, ${grp} as "group",
           (coalesce(sum(settled_micros), 0) + coalesce(sum(reserved_micros) filter (where status = 'reserved'), 0))::bigint::int as spend_micros,
           (count(*) filter (where status <> 'released'))::int as charges,
           coalesce(sum(reserved_micros) filter (where status = 'reserved'), 0)::bigint::int as held_micros
    from kiln_private.charges
    where pool_id = ${pool} and (created_at at time zone 'UTC')::date between ${from}::date and ${to}::date
    group by 1, 2 having count(*) filter (where status <> 'released') > 0`;
  return rows.map((r) => ({ ...r })).sort(order);
}

/** The documented order: day, spend descending, group (null last). */
function order(a: any, b: any): number {
  if (a.day !== b.day) return a.day < b.day ? -1 : 1;
  if (a.spend_micros !== b.spend_micros) return b.spend_micros - a.spend_micros;
  if (a.group === b.group) return 0;
  if (a.group === null) return 1;
  if (b.group === null) return -1;
  return Buffer.compare(Buffer.from(a.group), Buffer.from(b.group));
}

const pick = (r: any) => ({ day: r.day, group: r.group, spend_micros: r.spend_micros, charges: r.charges, held_micros: r.held_micros });

/** Charges of one account over three days: end users, metadata, none; settled, failed and in flight. */
async function seed(key: string, tag: string) {
  const ids: string[] = [];
  const shapes: Array<Record<string, unknown>> = [
    { endUser: `${tag}-alice`, metadata: { project: 'alpha', env: 'prod' } },
    { endUser: `${tag}-bob`, metadata: { project: 'beta' } },
    { endUser: `${tag}-carol` },
    { metadata: { project: 'alpha' } },
    {},
    { endUser: `${tag}-alice` },
    { endUser: `${tag}-dave`, metadata: { env: 'dev' } },
  ];
  for (let i = 0; i < 28; i++) ids.push(await post(key, shapes[i % shapes.length]!));
  for (const [i, id] of ids.entries()) {
    if (i % 9 === 8) continue; // in flight
    if (i % 6 === 5) await srv.db.sql`select kiln.fail_generation(${id}, 'upstream said no')`;
    else await complete(id, 100 + (i * 37) % 400);
  }
  // Spread over three days, settled and in-flight alike.
  for (const [i, id] of ids.entries()) if (i % 3) await backdate(id, i % 3);
  return ids;
}

before(async () => {
  srv = await startServer();
  // No worker: outcomes are settled through the SQL functions the worker uses.
  await srv.db.sql`delete from graphile_worker._private_jobs`;
});

test('groupBy=endUser and groupBy=metadata.<key>: each day\'s groups, null included, add up exactly to its days', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: 50_000_000 });
  const { key } = await createKey(srv.db.sql, a.id);
  await seed(key, 'sum');
  const range = `from=${daysAgo(2)}&to=${today()}`;
  for (const groupBy of ['endUser', 'metadata.project', 'metadata.env', 'metadata.absent']) {
    const { rows, first } = await allGroups(key, `${range}&groupBy=${groupBy}`, 1000);
    assert.equal(first.groupBy, groupBy);
    // Without groupBy the body is what it was; with it, the same days.
    const plain = await api(srv.base, key, `/usage/daily?${range}`);
    assert.equal(plain.status, 200);
    assert.deepEqual(Object.keys(plain.body), ['scope', 'workspace_id', 'from', 'to', 'days']);
    assert.deepEqual(first.days, plain.body.days);
    const days = new Set(plain.body.days.map((d: any) => d.day));
    assert.equal(days.size, 3, 'three days of charges');
    for (const day of days) {
      const total = plain.body.days.filter((d: any) => d.day === day);
      const groups = rows.filter((g) => g.day === day);
      for (const f of ['spend_micros', 'charges', 'held_micros'] as const) {
        const want = total.reduce((s: number, d: any) => s + d[f], 0);
        assert.equal(groups.reduce((s, g) => s + g[f], 0), want, `${groupBy} ${day} ${f}`);
        assert.equal(groups.reduce((s, g) => s + g.batch[f] + g.interactive[f], 0), want, `${groupBy} ${day} ${f} by lane`);
      }
      if (groupBy !== 'metadata.absent') assert.ok(groups.some((g) => g.group !== null), `${groupBy} ${day} has groups`);
    }
    // The null group is there (some charges have no end user / no such key), and every figure is the ledger's.
    assert.ok(rows.some((g) => g.group === null), `${groupBy}: the null group`);
    if (groupBy === 'metadata.absent') assert.ok(rows.every((g) => g.group === null));
    const want = await ledgerGroups(a.id, groupBy === 'endUser' ? 'end_user' : groupBy.slice('metadata.'.length), daysAgo(2), today());
    assert.deepEqual(rows.map(pick), want, groupBy);
    assert.ok(rows.some((g) => g.held_micros > 0), 'reservations in flight count in their group');
  }
});

test('groups page by keyset: every limit gives the same rows, in order, none lost or repeated', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: 50_000_000 });
  const { key } = await createKey(srv.db.sql, a.id);
  await seed(key, 'page');
  // Ties: two end users with the same settled spend on the same day.
  for (const u of ['tie-b', 'tie-a']) await complete(await post(key, { endUser: u, metadata: { project: 'tie' } }), 333);
  const range = `from=${daysAgo(2)}&to=${today()}`;
  for (const groupBy of ['endUser', 'metadata.project']) {
    const whole = await allGroups(key, `${range}&groupBy=${groupBy}`, 1000);
    assert.equal(whole.pages, 1);
    assert.deepEqual(whole.rows, [...whole.rows].sort(order), `${groupBy}: ordered`);
    for (const limit of [1, 2, 3]) {
      const paged = await allGroups(key, `${range}&groupBy=${groupBy}`, limit);
      assert.deepEqual(paged.rows, whole.rows, `${groupBy} limit=${limit}`);
      assert.equal(paged.pages, Math.ceil(whole.rows.length / limit));
    }
  }
  // Default page size 100; the last page's next_cursor is null.
  const res = await api(srv.base, key, `/usage/daily?${range}&groupBy=endUser`);
  assert.equal(res.body.next_cursor, null);
});

test('GET /end-users: by usedMicros then endUser, keyset pages, the month roll-up and a day range alike', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: 50_000_000 });
  const { key } = await createKey(srv.db.sql, a.id);
  const ids = await seed(key, 'list');
  for (const u of ['list-tie-b', 'list-tie-a']) await complete(await post(key, { endUser: u }), 250);
  // An end user whose only charge failed is not listed.
  await srv.db.sql`select kiln.fail_generation(${await post(key, { endUser: 'list-failed' })}, 'no')`;
  assert.ok(ids.length);

  const expected = async (from: string, to: string) => (await srv.db.sql`
    select end_user as "endUser",
           (coalesce(sum(settled_micros), 0) + coalesce(sum(reserved_micros) filter (where status = 'reserved'), 0))::bigint::int as "usedMicros",
           (count(*) filter (where status <> 'released'))::int as generations
    from kiln_private.charges
    where pool_id = ${a.id} and end_user is not null and (created_at at time zone 'UTC')::date between ${from}::date and ${to}::date
    group by 1 having count(*) filter (where status <> 'released') > 0
    order by 2 desc, convert_to(end_user, 'UTF8')`).map((r) => ({ ...r }));
  const list = async (query: string, limit: number) => {
    const out: any[] = [];
    let cursor: string | null = null;
    do {
      const res = await api(srv.base, key, `/end-users?${query}${query ? '&' : ''}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(Object.keys(res.body), ['data', 'nextCursor']);
      out.push(...res.body.data);
      cursor = res.body.nextCursor;
    } while (cursor);
    return out;
  };

  // The default: this calendar month (the month roll-up).
  const now = new Date();
  const first = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString().slice(0, 10);
  const last = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 0)).toISOString().slice(0, 10);
  const month = await expected(first, last);
  assert.ok(month.length >= 4);
  assert.ok(!month.some((u) => u.endUser === 'list-failed'));
  for (const limit of [1, 2, 1000]) assert.deepEqual(await list('', limit), month, `month, limit=${limit}`);
  assert.deepEqual(await list(`from=${first}&to=${last}`, 3), month);
  const tie = month.findIndex((u) => u.endUser === 'list-tie-a');
  assert.equal(month[tie + 1]?.endUser, 'list-tie-b', 'ties by endUser');
  // Any other range sums the days.
  const days = await expected(daysAgo(1), today());
  assert.ok(days.length >= 4);
  for (const limit of [1, 2, 1000]) assert.deepEqual(await list(`from=${daysAgo(1)}&to=${today()}`, limit), days, `two days, limit=${limit}`);
  assert.deepEqual(await list(`from=${daysAgo(1)}`, 2), days, 'from alone: through today');
});

test('validation: every bad parameter is a 400 invalid_request naming it, never a 5xx', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: 50_000_000 });
  const { key } = await createKey(srv.db.sql, a.id);
  await seed(key, 'val');
  const bad = async (path: string, starts: string) => {
    const res = await api(srv.base, key, path);
    assert.equal(res.status, 400, `${path}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error.type, 'invalid_request', path);
    assert.ok(res.body.error.message.startsWith(starts), `${path}: ${res.body.error.message}`);
    return res.body.error;
  };
  for (const g of ['foo', 'enduser', 'metadata', 'metadata.', 'metadata.bad key', `metadata.${'k'.repeat(65)}`, 'metadata.a/b', 'endUser,metadata.x']) {
    const e = await bad(`/usage/daily?groupBy=${encodeURIComponent(g)}`, 'groupBy:');
    assert.deepEqual(e.details?.map((d: any) => d.path), ['groupBy'], g);
  }
  await bad('/usage/daily?groupBy=endUser&groupBy=endUser', 'groupBy:');
  for (const l of ['0', '1001', '-1', 'x', '1.5', '']) await bad(`/usage/daily?groupBy=endUser&limit=${l}`, 'limit:');
  // Without groupBy, GET /usage/daily answers as it always did: limit and cursor page groups only.
  const plain = await api(srv.base, key, `/usage/daily?from=${daysAgo(2)}&to=${today()}`);
  for (const q of ['limit=5', 'cursor=abc']) {
    const r = await api(srv.base, key, `/usage/daily?from=${daysAgo(2)}&to=${today()}&${q}`);
    assert.equal(r.status, 200, q);
    assert.deepEqual(r.body, plain.body, q);
  }
  await bad('/usage/daily?groupBy=endUser&cursor=abc', 'cursor:');
  await bad('/usage/daily?groupBy=endUser&from=2026-02-30', 'from:');
  // A cursor of one groupBy (or an edited one) is refused with another.
  const page = await api(srv.base, key, `/usage/daily?from=${daysAgo(2)}&to=${today()}&groupBy=endUser&limit=1`);
  const cursor: string = page.body.next_cursor;
  assert.ok(cursor);
  await bad(`/usage/daily?from=${daysAgo(2)}&to=${today()}&groupBy=metadata.project&cursor=${cursor}`, 'cursor:');
  const edited = cursor.slice(0, 5) + (cursor[5] === 'A' ? 'B' : 'A') + cursor.slice(6);
  await bad(`/usage/daily?groupBy=endUser&cursor=${edited}`, 'cursor:');

  await bad('/end-users?from=2026-13-01', 'from:');
  await bad('/end-users?to=2026-01-31', 'from:');
  await bad('/end-users?from=2026-02-01&to=2026-01-31', 'from:');
  await bad('/end-users?from=2024-01-01&to=2026-01-31', 'to:');
  for (const l of ['0', '1001', 'x']) await bad(`/end-users?limit=${l}`, 'limit:');
  await bad('/end-users?cursor=nope', 'cursor:');
  const eu = await api(srv.base, key, '/end-users?limit=1');
  assert.ok(eu.body.nextCursor);
  await bad(`/end-users?from=${daysAgo(1)}&cursor=${eu.body.nextCursor}`, 'cursor:');
  // Without a key: the same 401 as anywhere.
  const anon = await api(srv.base, null, '/end-users');
  assert.equal(anon.status, 401);
});

test('isolation: another account\'s end users never show; a workspace-bound key sees its Team pool, a personal key its own', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: 50_000_000 });
  const b = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: 50_000_000 });
  const ka = (await createKey(srv.db.sql, a.id)).key;
  const kb = (await createKey(srv.db.sql, b.id)).key;
  // The same end user id in both accounts, and one only B has.
  await complete(await post(ka, { endUser: 'shared', metadata: { project: 'p' } }), 100);
  await complete(await post(kb, { endUser: 'shared', metadata: { project: 'p' } }), 900);
  await complete(await post(kb, { endUser: 'only-b', metadata: { project: 'q' } }), 500);

  const euA = await api(srv.base, ka, '/end-users');
  assert.deepEqual(euA.body.data, [{ endUser: 'shared', usedMicros: 100, generations: 1 }]);
  const gA = await api(srv.base, ka, `/usage/daily?from=${today()}&to=${today()}&groupBy=metadata.project`);
  assert.deepEqual(gA.body.groups.map(pick), [{ day: today(), group: 'p', spend_micros: 100, charges: 1, held_micros: 0 }]);

  // A Team pool: both members' charges, for either member's workspace-bound key; not the personal keys'.
  const [ws] = await srv.db.sql`select * from kiln.create_workspace('Eu studio', ${a.id})`;
  await srv.db.sql`select kiln.add_workspace_member(${ws.id}, ${b.id}, 'admin')`;
  await srv.db.sql`select kiln.set_workspace_plan(${ws.id}, 'active', 80000000, true)`;
  const wa = (await createKey(srv.db.sql, a.id, { workspaceId: ws.id })).key;
  const wb = (await createKey(srv.db.sql, b.id, { workspaceId: ws.id })).key;
  await complete(await post(wa, { endUser: 'team-1' }), 40);
  await complete(await post(wb, { endUser: 'team-1' }), 60);
  await complete(await post(wb, { endUser: 'team-2' }), 10);
  await post(wb, {}); // in flight, no end user: the null group
  for (const k of [wa, wb]) {
    const eu = await api(srv.base, k, '/end-users');
    assert.deepEqual(eu.body.data, [{ endUser: 'team-1', usedMicros: 100, generations: 2 }, { endUser: 'team-2', usedMicros: 10, generations: 1 }]);
    const g = await api(srv.base, k, `/usage/daily?from=${today()}&to=${today()}&groupBy=endUser`);
    assert.equal(g.body.scope, 'workspace');
    assert.deepEqual(g.body.groups, [...g.body.groups].sort(order));
    assert.deepEqual(g.body.groups.map((x: any) => x.group).sort(), ['team-1', 'team-2', null].sort());
    assert.deepEqual(g.body.groups.filter((x: any) => x.group).map(pick), [
      { day: today(), group: 'team-1', spend_micros: 100, charges: 2, held_micros: 0 },
      { day: today(), group: 'team-2', spend_micros: 10, charges: 1, held_micros: 0 },
    ]);
  }
  assert.deepEqual((await api(srv.base, ka, '/end-users')).body.data.map((x: any) => x.endUser), ['shared']);
  assert.deepEqual((await api(srv.base, kb, '/end-users')).body.data.map((x: any) => x.endUser), ['shared', 'only-b']);
  // A member who left sees nothing of the pool any more.
  await srv.db.sql`select kiln.remove_workspace_member(${ws.id}, ${b.id})`;
  assert.deepEqual((await api(srv.base, wb, '/end-users')).body.data, []);
  const left = await api(srv.base, wb, `/usage/daily?from=${today()}&to=${today()}&groupBy=endUser`);
  assert.deepEqual(left.body.groups, []);
});

test('the roll-ups equal the ledger, and rebuild_charge_days rebuilds them to the same rows; kiln.usage_by_end_user is the analysts\'', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro', budgetMicros: 50_000_000 });
  const { key } = await createKey(srv.db.sql, a.id);
  await seed(key, 'rollup');
  const snapshot = async () => ({
    days: await srv.db.sql`select * from kiln_private.charge_end_user_days order by pool_id, day, end_user`,
    months: await srv.db.sql`select * from kiln_private.charge_end_user_months order by pool_id, month, end_user`,
    metadata: await srv.db.sql`select * from kiln_private.charge_metadata_days order by pool_id, day, mkey, mvalue`,
    attributes: await srv.db.sql`select * from kiln_private.charge_attribute_days order by pool_id, day, attribute`,
  });
  // Rows whose counts all went back to zero (a charge moved to another day) are what rebuild leaves out.
  const nonzero = (s: Awaited<ReturnType<typeof snapshot>>) => Object.fromEntries(Object.entries(s).map(([k, rows]) =>
    [k, rows.filter((r: any) => Number(r.charges) !== 0 || Number(r.spend_micros) !== 0).map((r: any) => ({ ...r }))]));
  const kept = nonzero(await snapshot());
  await srv.db.sql`select kiln_private.rebuild_charge_days()`;
  assert.deepEqual(nonzero(await snapshot()), kept);
  assert.ok(kept.days!.length && kept.months!.length && kept.metadata!.length && kept.attributes!.length);

  // The view: per day, personal scope and end user, as the ledger groups it.
  const view = await srv.db.sql`
    select day::text, account_id, workspace_id, end_user, charges::int, settled_charges::int, released_charges::int,
           open_reservations::int, spend_micros::int, held_micros::int
    from kiln.usage_by_end_user where account_id = ${a.id} order by 1, 4`;
  const ledger = await srv.db.sql`
    select (created_at at time zone 'UTC')::date::text as day, account_id, workspace_id, end_user, count(*)::int as charges,
           (count(*) filter (where status = 'settled'))::int as settled_charges, (count(*) filter (where status = 'released'))::int as released_charges,
           (count(*) filter (where status = 'reserved'))::int as open_reservations, coalesce(sum(settled_micros), 0)::int as spend_micros,
           coalesce(sum(reserved_micros) filter (where status = 'reserved'), 0)::int as held_micros
    from kiln_private.charges where account_id = ${a.id} and end_user is not null group by 1, 2, 3, 4 order by 1, 4`;
  assert.deepEqual(view.map((r) => ({ ...r })), ledger.map((r) => ({ ...r })));
  assert.ok(view.some((r) => r.open_reservations > 0));
  // Analysts read it (as the other views); the service role does not need it.
  const [{ analyst }] = await srv.db.sql`select has_table_privilege('kiln_analyst', 'kiln.usage_by_end_user', 'select') as analyst`;
  assert.equal(analyst, true);
});
