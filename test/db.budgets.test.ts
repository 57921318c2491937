// kiln.reserve_budget / settle_charge / release_charge / get_usage: atomic, exact integer
// microdollars, personal vs Team pools, lapsed plans and departed members.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { createAccount, createTestDb, type TestDb } from './_setup.ts';

let db: TestDb;
before(async () => {
  db = await createTestDb();
});

const reserve = (accountId: string, amount: number | bigint, workspaceId: string | null = null) =>
  db.sql`select * from kiln.reserve_budget(${accountId}, ${workspaceId}, null, 'local/sketch', 'api', ${String(amount)}::bigint)`.then((r) => r[0]);

const usage = (accountId: string, workspaceId: string | null = null) =>
  db.sql`select kiln.get_usage(${accountId}, ${workspaceId}) as u`.then((r) => r[0].u);

async function sqlstate(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e: any) {
    return e.code;
  }
  return 'no error';
}

test('concurrent reservations never exceed the budget (checked on the ledger)', async () => {
  const a = await createAccount(db.sql, { budgetMicros: 1_000_000 });
  // 120 racing reservations of 30,000 µ$: exactly 33 fit into 1,000,000.
  const results = await Promise.allSettled(Array.from({ length: 120 }, () => reserve(a.id, 30_000)));
  const ok = results.filter((r) => r.status === 'fulfilled').length;
  const rejected = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
  assert.equal(ok, 33);
  for (const r of rejected) assert.equal(r.reason.code, 'KQ001');
  const [ledger] = await db.sql`select sum(reserved_micros)::bigint as held, count(*)::int as n from kiln_private.charges where account_id = ${a.id}`;
  assert.equal(Number(ledger.held), 990_000);
  assert.equal(ledger.n, 33);
  const u = await usage(a.id);
  assert.equal(u.used_micros, 990_000);
  assert.equal(u.remaining_micros, 10_000);
});

test('settle charges the actual cost, never more than reserved, exactly once', async () => {
  const a = await createAccount(db.sql, { budgetMicros: 100_000 });
  const c = await reserve(a.id, 40_000);
  const [s1] = await db.sql`select * from kiln.settle_charge(${c.id}, 25000)`;
  assert.equal(s1.status, 'settled');
  assert.equal(Number(s1.settled_micros), 25_000);
  // Duplicated settlement (a retried job) changes nothing.
  const [s2] = await db.sql`select * from kiln.settle_charge(${c.id}, 39000)`;
  assert.equal(Number(s2.settled_micros), 25_000);
  const [r] = await db.sql`select * from kiln.release_charge(${c.id})`;
  assert.equal(r.status, 'settled', 'a settled charge cannot be released');
  // Settlement over the reservation is clamped.
  const c2 = await reserve(a.id, 10_000);
  const [s3] = await db.sql`select * from kiln.settle_charge(${c2.id}, 999999)`;
  assert.equal(Number(s3.settled_micros), 10_000);
  const u = await usage(a.id);
  assert.equal(u.used_micros, 35_000);
  assert.equal(u.remaining_micros, 65_000);
  const [bp] = await db.sql`select held_micros::int as h, settled_micros::int as s from kiln_private.budget_periods where pool_id = ${a.id}`;
  assert.deepEqual(bp, { h: 0, s: 35_000 });
});

test('concurrent duplicate settlements and releases charge exactly once', async () => {
  const a = await createAccount(db.sql, { budgetMicros: 100_000 });
  const c = await reserve(a.id, 50_000);
  await Promise.all([
    ...Array.from({ length: 10 }, () => db.sql`select kiln.settle_charge(${c.id}, 30000)`),
    ...Array.from({ length: 10 }, () => db.sql`select kiln.release_charge(${c.id})`),
  ]);
  const [row] = await db.sql`select status from kiln_private.charges where id = ${c.id}`;
  const [bp] = await db.sql`select held_micros::int as h, settled_micros::int as s from kiln_private.budget_periods where pool_id = ${a.id}`;
  assert.equal(bp.h, 0);
  assert.equal(bp.s, row.status === 'settled' ? 30_000 : 0);
});

test('release returns the reservation to the budget', async () => {
  const a = await createAccount(db.sql, { budgetMicros: 50_000 });
  const c = await reserve(a.id, 50_000);
  assert.equal(await sqlstate(reserve(a.id, 1)), 'KQ001');
  await db.sql`select kiln.release_charge(${c.id})`;
  assert.equal((await usage(a.id)).used_micros, 0);
  await reserve(a.id, 50_000);
});

test('blocked tier is insufficient_quota; unlimited budgets never run out', async () => {
  const blocked = await createAccount(db.sql, { tier: 'blocked' });
  assert.equal(await sqlstate(reserve(blocked.id, 0)), 'KQ001');
  const ent = await createAccount(db.sql, { tier: 'enterprise' });
  await reserve(ent.id, 10n ** 15n);
  const u = await usage(ent.id);
  assert.equal(u.token_budget_micros, null);
  assert.equal(u.remaining_micros, null);
  assert.equal(u.resets_at, null);
  assert.equal(u.used_micros, 10 ** 15);
});

test('Team pool: workspace-bound charges draw on the pool; lapsed plans and departed members get KP001', async () => {
  const owner = await createAccount(db.sql, { budgetMicros: 10 });
  const member = await createAccount(db.sql, { budgetMicros: 10 });
  const [ws] = await db.sql`select * from kiln.create_workspace('Acme', ${owner.id})`;
  await db.sql`select kiln.add_workspace_member(${ws.id}, ${member.id}, 'member')`;
  assert.equal(await sqlstate(reserve(member.id, 5, ws.id)), 'KP001', 'no Team plan yet');
  await db.sql`select kiln.set_workspace_plan(${ws.id}, 'active', 100000, true)`;
  await reserve(member.id, 60_000, ws.id);
  assert.equal(await sqlstate(reserve(owner.id, 50_000, ws.id)), 'KQ001', 'pool exhausted');
  // The personal budget is untouched and never a fallback.
  assert.equal((await usage(member.id)).used_micros, 0);
  const wu = await usage(member.id, ws.id);
  assert.equal(wu.scope, 'workspace');
  assert.equal(wu.workspace_id, ws.id);
  assert.equal(wu.workspace_budget_micros, 100_000);
  assert.equal(wu.workspace_used_micros, 60_000);
  assert.equal(wu.workspace_remaining_micros, 40_000);
  assert.ok(wu.workspace_resets_at);

  await db.sql`select kiln.remove_workspace_member(${ws.id}, ${member.id})`;
  assert.equal(await sqlstate(reserve(member.id, 1, ws.id)), 'KP001', 'member left');
  const left = await usage(member.id, ws.id);
  assert.equal(left.scope, 'workspace');
  assert.equal(left.workspace_budget_micros, null);
  assert.equal(left.workspace_used_micros, null);
  assert.equal(left.workspace_remaining_micros, null);
  assert.equal(left.workspace_resets_at, null);

  await db.sql`select kiln.set_workspace_plan(${ws.id}, 'lapsed', null, false)`;
  assert.equal(await sqlstate(reserve(owner.id, 1, ws.id)), 'KP001', 'plan lapsed');

  await db.sql`select kiln.set_workspace_plan(${ws.id}, 'active', null, true)`;
  await reserve(owner.id, 10n ** 12n, ws.id);
  const unl = await usage(owner.id, ws.id);
  assert.equal(unl.workspace_budget_micros, null, 'unlimited pool');
  assert.equal(unl.workspace_remaining_micros, null);
  assert.equal(unl.workspace_used_micros, 10 ** 12 + 60_000, 'used is still reported when unlimited');
});

test('personal usage has every field and null workspace fields', async () => {
  const a = await createAccount(db.sql, { tier: 'legacy_free' });
  const u = await usage(a.id);
  assert.deepEqual(Object.keys(u).sort(), [
    'key_budget_micros', 'key_remaining_micros', 'key_used_micros',
    'remaining_micros', 'resets_at', 'scope', 'tier', 'token_budget_micros', 'used_micros', 'workspace_budget_micros',
    'workspace_id', 'workspace_remaining_micros', 'workspace_resets_at', 'workspace_used_micros',
  ]);
  assert.equal(u.tier, 'legacy_free');
  assert.equal(u.scope, 'personal');
  assert.equal(u.token_budget_micros, 1_000_000, 'tier default');
  assert.match(u.resets_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.ok(new Date(u.resets_at) > new Date());
  for (const k of ['workspace_id', 'workspace_budget_micros', 'workspace_used_micros', 'workspace_remaining_micros', 'workspace_resets_at',
    'key_budget_micros', 'key_used_micros', 'key_remaining_micros']) {
    assert.equal(u[k], null, k);
  }
});

test('periods roll lazily: last period\'s spend does not count against this one', async () => {
  const a = await createAccount(db.sql, { budgetMicros: 100 });
  await reserve(a.id, 100);
  assert.equal(await sqlstate(reserve(a.id, 1)), 'KQ001');
  // Move the anchor back two months and a day: a fresh period has begun.
  await db.sql`update kiln_private.accounts set period_anchor = now() - interval '2 months 1 day' where id = ${a.id}`;
  const u = await usage(a.id);
  assert.equal(u.used_micros, 0);
  assert.equal(u.remaining_micros, 100);
  await reserve(a.id, 100);
  const [p] = await db.sql`select kiln_private.period_start('2026-01-31T00:00:00Z', '2026-03-01T12:00:00Z') as s`;
  assert.equal(p.s.toISOString(), '2026-02-28T00:00:00.000Z', 'month arithmetic clamps to the month end');
});

test('period boundaries are UTC months whatever the session time zone', async () => {
  const at = ['2026-03-31T23:30:00Z', '2026-04-01T00:30:00Z'];
  const starts = await db.sql.begin(async (tx) => {
    const out: string[] = [];
    for (const tz of ['UTC', 'America/New_York', 'Asia/Tokyo']) {
      await tx.unsafe(`set local timezone = '${tz}'`);
      for (const t of at) {
        const [p] = await tx`select kiln_private.period_start('2026-01-01T00:00:00Z', ${t}::timestamptz) as s`;
        out.push(`${tz} ${t} → ${p!.s.toISOString()}`);
      }
    }
    return out;
  });
  assert.deepEqual(starts, [
    'UTC 2026-03-31T23:30:00Z → 2026-03-01T00:00:00.000Z',
    'UTC 2026-04-01T00:30:00Z → 2026-04-01T00:00:00.000Z',
    'America/New_York 2026-03-31T23:30:00Z → 2026-03-01T00:00:00.000Z',
    'America/New_York 2026-04-01T00:30:00Z → 2026-04-01T00:00:00.000Z',
    'Asia/Tokyo 2026-03-31T23:30:00Z → 2026-03-01T00:00:00.000Z',
    'Asia/Tokyo 2026-04-01T00:30:00Z → 2026-04-01T00:00:00.000Z',
  ]);
});

test('new accounts and Team plans are anchored at UTC midnight whatever the session time zone', async () => {
  const anchors = await db.sql.begin(async (tx) => {
    const out: Array<{ tz: string; account: Date; plan: Date }> = [];
    for (const tz of ['America/New_York', 'Asia/Kolkata', 'UTC']) {
      await tx.unsafe(`set local timezone = '${tz}'`);
      const [a] = await tx`select * from kiln.create_account(${`anchor-${tz}-${Date.now()}@example.test`}, 'pro', null, true)`;
      const [ws] = await tx`select * from kiln.create_workspace('anchor', ${a!.id})`;
      await tx`select kiln.set_workspace_plan(${ws!.id}, 'active', 1000, true)`;
      const [r] = await tx`
        select acc.period_anchor as account, w.plan_period_anchor as plan
        from kiln_private.accounts acc, kiln_private.workspaces w where acc.id = ${a!.id} and w.id = ${ws!.id}`;
      out.push({ tz, account: r!.account, plan: r!.plan });
    }
    return out;
  });
  const today = new Date().toISOString().slice(0, 10);
  for (const { tz, account, plan } of anchors) {
    // The transaction's now() is one instant, so every anchor is the same UTC midnight.
    assert.match(account.toISOString(), /T00:00:00\.000Z$/, `${tz} account anchor ${account.toISOString()}`);
    assert.match(plan.toISOString(), /T00:00:00\.000Z$/, `${tz} plan anchor ${plan.toISOString()}`);
    assert.ok(Math.abs(account.getTime() - Date.parse(`${today}T00:00:00Z`)) <= 86_400_000, `${tz}: anchored today (UTC)`);
  }
});

test('amounts are exact integers far beyond 2^53', async () => {
  const a = await createAccount(db.sql, { budgetMicros: 2n ** 62n });
  await reserve(a.id, 2n ** 61n + 1n);
  const [r] = await db.sql`select (kiln.get_usage(${a.id}, null)->>'remaining_micros') as rem`;
  assert.equal(r.rem, String(2n ** 62n - 2n ** 61n - 1n));
});
