// kiln.admin_list_accounts and kiln_private.account_spend: spend this period kept by the budget
// trigger, pages sorted by it with cursors, email search (narrow and wide), periods that roll.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { createAccount, createTestDb, type TestDb } from './_setup.ts';

let db: TestDb;
before(async () => {
  db = await createTestDb();
});

const reserve = (accountId: string, amount: number, workspaceId: string | null = null) =>
  db.sql`select * from kiln.reserve_budget(${accountId}, ${workspaceId}, null, 'local/sketch', 'api', ${String(amount)}::bigint)`.then((r) => r[0]);

interface Page { data: Array<{ id: string; email: string; usedMicros: number; keyCount: number }>; nextCursor: string | null }

async function page(limit: number, cursor: string | null = null, q: string | null = null): Promise<Page> {
  const [used, id] = cursor ? cursor.split('.') : [null, null];
  const [r] = await db.sql`select kiln.admin_list_accounts(${limit}, ${used}::bigint, ${id}::uuid, ${q}) as p`;
  return r!.p;
}

async function all(limit: number, q: string | null = null) {
  const out: Page['data'] = [];
  let cursor: string | null = null;
  // Every page to the end (the wide test leaves 5,200+ accounts: a cap of 100 pages of 50 once
  // cut the walk short of a row whose random id sorted it past the 5,000th).
  for (let i = 0; ; i++) {
    if (i === 10_000) throw new Error('the walk did not end within 10,000 pages');
    const p = await page(limit, cursor, q);
    out.push(...p.data);
    cursor = p.nextCursor;
    if (!cursor) break;
  }
  return out;
}

test('spend this period follows reservations, settlements and releases; workspace pools do not count', async () => {
  const a = await createAccount(db.sql, { email: `spend-a-${Date.now()}@acct.test` });
  const c1 = await reserve(a.id, 40_000);
  const c2 = await reserve(a.id, 10_000);
  const row = async () => (await db.sql`select used_micros from kiln_private.account_spend where account_id = ${a.id}`)[0]!;
  assert.equal(Number((await row()).used_micros), 50_000);
  await db.sql`select kiln.settle_charge(${c1.id}, 25000)`;
  assert.equal(Number((await row()).used_micros), 35_000);
  await db.sql`select kiln.release_charge(${c2.id})`;
  assert.equal(Number((await row()).used_micros), 25_000);
  const [u] = await db.sql`select kiln.get_usage(${a.id}, null) as u`;
  assert.equal(u!.u.used_micros, 25_000, 'the same figure as GET /usage');

  const [ws] = await db.sql`select * from kiln.create_workspace('spend ws', ${a.id})`;
  await db.sql`select kiln.set_workspace_plan(${ws!.id}, 'active', null, true)`;
  await reserve(a.id, 7_000, ws!.id);
  assert.equal(Number((await row()).used_micros), 25_000);
});

test('pages: sorted by spend then id, every account exactly once across cursors, zero spenders last', async () => {
  const tag = `pg${Date.now()}`;
  const accts = [];
  for (let i = 0; i < 12; i++) accts.push(await createAccount(db.sql, { email: `${tag}-${i}@sort.test` }));
  // Spends 0 (four), 5,000 (three: a tie), and distinct amounts.
  const spends = [0, 0, 0, 0, 5_000, 5_000, 5_000, 1_000, 70_000, 20_000, 3_000, 999];
  for (const [i, s] of spends.entries()) if (s) await reserve(accts[i]!.id, s);

  const mine = (rows: Page['data']) => rows.filter((r) => r.email.startsWith(tag));
  for (const size of [1, 3, 5, 50]) {
    const rows = await all(size);
    const ids = rows.map((r) => r.id);
    assert.equal(new Set(ids).size, ids.length, `no duplicates at page size ${size}`);
    const m = mine(rows);
    assert.equal(m.length, 12, `all 12 at page size ${size}`);
    // The whole list is ordered by (usedMicros desc, id desc).
    for (let i = 1; i < rows.length; i++) {
      const [p, c] = [rows[i - 1]!, rows[i]!];
      assert.ok(p.usedMicros > c.usedMicros || (p.usedMicros === c.usedMicros && p.id > c.id), `order at ${i} (size ${size})`);
    }
    assert.deepEqual(m.map((r) => r.usedMicros), [70_000, 20_000, 5_000, 5_000, 5_000, 3_000, 1_000, 999, 0, 0, 0, 0]);
  }
});

test('search: a substring of the email, narrow or wide, case-insensitive, LIKE characters literal', async () => {
  const tag = `srch${Date.now()}`;
  const a = await createAccount(db.sql, { email: `Alice.${tag}@Search.test` });
  const b = await createAccount(db.sql, { email: `bob.${tag}@search.test` });
  await createAccount(db.sql, { email: `car_ol.${tag}@search.test` });
  await reserve(b.id, 9_000);
  const hit = await all(2, `${tag}@SEARCH`);
  assert.equal(hit.length, 3);
  assert.equal(hit[0]!.id, b.id, 'the spender first');
  assert.deepEqual((await all(10, `alice.${tag}`)).map((r) => r.id), [a.id]);
  assert.equal((await all(10, `_ol.${tag}`)).length, 1, '_ is literal');
  assert.equal((await all(10, `%.${tag}`)).length, 0, '% is literal');
  assert.equal((await all(10, `nobody-${tag}`)).length, 0);
});

test('a wide search (5,000+ matches) walks the spend index and still pages exactly', async () => {
  const tag = `wide${Date.now()}`;
  await db.sql`insert into kiln_private.accounts (email, tier) select ${tag} || i || '@wide.test', 'pro' from generate_series(1, 5200) i`;
  const ids = (await db.sql`select id from kiln_private.accounts where email like ${tag + '%'} order by email limit 3`).map((r) => r.id as string);
  for (const [i, id] of ids.entries()) await reserve(id, 1000 * (i + 1));
  const first = await page(50, null, `${tag}`);
  assert.equal(first.data.length, 50);
  assert.deepEqual(first.data.slice(0, 3).map((r) => r.id), [ids[2], ids[1], ids[0]]);
  const rows = await all(200, tag);
  assert.equal(rows.length, 5200);
  assert.equal(new Set(rows.map((r) => r.id)).size, 5200);
});

test('a period that rolled without a charge counts as 0 at once, and the roll puts the row back in order', async () => {
  const tag = `roll${Date.now()}`;
  const a = await createAccount(db.sql, { email: `${tag}@roll.test` });
  await reserve(a.id, 123_000);
  // Move the period into the past, as if a month went by without a charge.
  await db.sql`update kiln_private.account_spend set period_start = period_start - interval '40 days', period_end = now() - interval '1 minute' where account_id = ${a.id}`;
  const rows = await all(50, tag);
  assert.deepEqual(rows.map((r) => r.usedMicros), [0]);
  const everyone = await all(50);
  assert.equal(everyone.filter((r) => r.id === a.id).length, 1, 'listed once, among the zeros');
  assert.ok(everyone.findIndex((r) => r.id === a.id) > everyone.findIndex((r) => r.usedMicros === 0) - 1);
  const [{ n }] = await db.sql`select kiln.roll_account_spend() as n`;
  assert.ok(n >= 1);
  const [s] = await db.sql`select used_micros, period_end > now() as current from kiln_private.account_spend where account_id = ${a.id}`;
  assert.equal(Number(s!.used_micros), 0);
  assert.equal(s!.current, true);
});

test('keyCount counts live keys only; bad limits are refused', async () => {
  const tag = `keys${Date.now()}`;
  const a = await createAccount(db.sql, { email: `${tag}@keys.test` });
  const mk = (n: number) => db.sql`insert into kiln_private.api_keys (account_id, key_hash, display_prefix, scopes)
    values (${a.id}, sha256(${Buffer.from(tag + n)}), 'kiln_live_x', '{read}') returning id`;
  await mk(1);
  const [k2] = await mk(2);
  await mk(3);
  await db.sql`update kiln_private.api_keys set revoked_at = now() where id = ${k2!.id}`;
  const [row] = await all(10, tag);
  assert.equal(row!.keyCount, 2);
  await assert.rejects(page(0), { code: 'KI001' });
  await assert.rejects(page(201), { code: 'KI001' });
});
