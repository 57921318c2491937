// Budgets per end user (docs/usage.md, "Budgets per end user"): PUT/GET/DELETE /end-users/{endUser},
// a cap exact under concurrency across two `kiln api` processes, the tightest of pool, key and end
// user deciding, holds given back on release, day and month periods, rpm per end user, validation,
// scopes, isolation across accounts and workspaces, and the audit entries — real HTTP and Postgres.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createKilnClient, KilnError } from 'kiln/client';
import { cli } from './_cli.ts';
import { spawnKiln } from './_live.ts';
import { startTestWorker, until } from './_generations.ts';
import { api, createAccount, createKey, startServer } from './_setup.ts';
import { saveWorkflow } from './_workflows.ts';

const srv = await startServer();
const sql = srv.db.sql;

/** The default image model reserves 1,000 µ$ an image. */
const IMAGE = 1000;

/** An account (pool budget as given, default ample) with a read/write/keys key. */
async function owner(opts: { budgetMicros?: number | null } = {}) {
  const a = await createAccount(sql, { budgetMicros: opts.budgetMicros === undefined ? 1_000_000_000 : opts.budgetMicros });
  const { id, key } = await createKey(sql, a.id, { scopes: ['read', 'write', 'keys'] });
  return { id: a.id, keyId: id, key };
}

const enc = encodeURIComponent;
const put = (key: string, endUser: string, body: unknown, base = srv.base) => api(base, key, `/end-users/${enc(endUser)}`, { method: 'PUT', body });
const get = (key: string, endUser: string, base = srv.base) => api(base, key, `/end-users/${enc(endUser)}`);
const del = (key: string, endUser: string) => api(srv.base, key, `/end-users/${enc(endUser)}`, { method: 'DELETE' });
const image = (key: string, endUser?: string, base = srv.base, headers: Record<string, string> = {}) =>
  api(base, key, '/generations', { body: { type: 'image', prompt: 'p', ...(endUser === undefined ? {} : { endUser }) }, headers });

/** The end user's running totals this period, and what its open and settled charges sum to. */
async function ledger(pool: string, endUser: string) {
  const [t] = await sql`select coalesce(sum(held_micros), 0)::int as held, coalesce(sum(settled_micros), 0)::int as settled
    from kiln_private.end_user_budget_periods where pool_id = ${pool} and end_user = ${endUser}`;
  const [c] = await sql`select coalesce(sum(reserved_micros) filter (where status = 'reserved'), 0)::int as held,
      coalesce(sum(settled_micros) filter (where status = 'settled'), 0)::int as settled, count(*)::int as n,
      count(*) filter (where end_user_period is not null)::int as capped
    from kiln_private.charges where pool_id = ${pool} and end_user = ${endUser}`;
  return { table: t!, charges: c! };
}

test('exact under concurrency: 3K POSTs for an end user capped at K images, over two kiln api processes, with another end user in the burst', async (t) => {
  const K = 20;
  const o = await owner();
  assert.equal((await put(o.key, 'alice', { budgetMicros: K * IMAGE, period: 'month' })).status, 200);
  const env = { KILN_LIMITER_TIMEOUT_MS: '10000' };
  const apis = await Promise.all([spawnKiln('api', srv.db.url, env), spawnKiln('api', srv.db.url, env)]);
  // As a client sends them: each with its own Idempotency-Key, retried on 503 (a loaded machine can
  // stall the limiter past its timeout; a retry of an accepted POST answers its replay).
  const post = async (i: number, endUser: string) => {
    const headers = { 'idempotency-key': `eu-${endUser}-${i}-${Math.random()}` };
    for (let attempt = 1; ; attempt++) {
      const r = await image(o.key, endUser, apis[i % 2]!.base, headers);
      if (r.status !== 503 || attempt === 5) return { endUser, r };
      await new Promise((ok) => setTimeout(ok, 200 * attempt));
    }
  };
  const t0 = performance.now();
  const burst = [...Array.from({ length: 3 * K }, (_, i) => ['alice', i] as const), ...Array.from({ length: K }, (_, i) => ['bob', i] as const)]
    .sort(() => Math.random() - 0.5);
  const res = await Promise.all(burst.map(([who, i]) => post(i, who)));
  t.diagnostic(`${res.length} POSTs answered in ${(performance.now() - t0).toFixed(0)} ms`);
  const ok = (x: { r: { status: number } }) => x.r.status === 202 || x.r.status === 200;
  const alice = res.filter((x) => x.endUser === 'alice');
  const bob = res.filter((x) => x.endUser === 'bob');
  assert.equal(alice.filter(ok).length, K, 'exactly the end user\'s cap');
  for (const x of alice.filter((y) => !ok(y))) {
    assert.equal(x.r.status, 429, JSON.stringify(x.r.body));
    assert.equal(x.r.body.error.type, 'insufficient_quota');
    assert.equal(x.r.body.error.message, 'end user "alice"\'s budget for this month is exhausted');
  }
  assert.equal(bob.filter(ok).length, K, `every POST of the other end user: ${JSON.stringify(bob.filter((y) => !ok(y)).map((y) => y.r.body))}`);
  // Nothing charged twice; the running totals are what the charges hold.
  const [dup] = await sql`select count(*)::int as n from (select generation_id from kiln_private.charges where account_id = ${o.id}
    group by generation_id having count(*) > 1) d`;
  assert.equal(dup!.n, 0);
  const a = await ledger(o.id, 'alice');
  assert.deepEqual(a.charges, { held: K * IMAGE, settled: 0, n: K, capped: K });
  assert.deepEqual(a.table, { held: K * IMAGE, settled: 0 });
  const b = await ledger(o.id, 'bob');
  assert.deepEqual({ n: b.charges.n, capped: b.charges.capped, table: b.table }, { n: K, capped: 0, table: { held: 0, settled: 0 } });
  const [pool] = await sql`select held_micros::int as held from kiln_private.budget_periods where pool_id = ${o.id}`;
  assert.equal(pool!.held, 2 * K * IMAGE, 'the pool holds exactly the accepted ones: refusals gave their debit back');
  const view = await get(o.key, 'alice');
  assert.deepEqual({ used: view.body.usedMicros, held: view.body.heldMicros, remaining: view.body.remainingMicros },
    { used: K * IMAGE, held: K * IMAGE, remaining: 0 });
  await Promise.all(apis.map((p) => p.stop()));
});

test('the tightest wins: the pool\'s or the key\'s budget below the end user\'s cap still decides, and refusals give every debit back', async () => {
  // The pool is tighter: 3 images, the end user 10.
  const p = await owner({ budgetMicros: 3 * IMAGE });
  await put(p.key, 'carol', { budgetMicros: 10 * IMAGE, period: 'day' });
  const r1 = await Promise.all(Array.from({ length: 6 }, () => image(p.key, 'carol')));
  assert.equal(r1.filter((r) => r.status === 202).length, 3);
  for (const r of r1.filter((x) => x.status !== 202)) assert.equal(r.body.error.message, 'the budget for this period is exhausted');
  assert.deepEqual((await ledger(p.id, 'carol')).table, { held: 3 * IMAGE, settled: 0 });

  // The key is tighter: its own budget of 2 images.
  const o = await owner();
  const capped = (await api(srv.base, o.key, '/keys', { body: { name: 'k', scopes: ['write', 'read'], budgetMicros: 2 * IMAGE } })).body;
  await put(o.key, 'carol', { budgetMicros: 10 * IMAGE, period: 'month' });
  const r2 = await Promise.all(Array.from({ length: 5 }, () => image(capped.key, 'carol')));
  assert.equal(r2.filter((r) => r.status === 202).length, 2);
  for (const r of r2.filter((x) => x.status !== 202)) assert.match(r.body.error.message, /key's budget/);
  assert.deepEqual((await ledger(o.id, 'carol')).table, { held: 2 * IMAGE, settled: 0 });

  // The end user is tighter than both: refused requests leave the pool and the key as they were.
  const dave = (await api(srv.base, o.key, '/keys', { body: { name: 'd', scopes: ['write', 'read'], budgetMicros: 50 * IMAGE } })).body;
  await put(o.key, 'dave', { budgetMicros: 2 * IMAGE, period: 'month' });
  const [before] = await sql`select held_micros::int as held from kiln_private.budget_periods where pool_id = ${o.id}`;
  const r3 = await Promise.all(Array.from({ length: 6 }, () => image(dave.key, 'dave')));
  assert.equal(r3.filter((r) => r.status === 202).length, 2);
  for (const r of r3.filter((x) => x.status !== 202)) {
    assert.equal(r.status, 429);
    assert.equal(r.body.error.message, 'end user "dave"\'s budget for this month is exhausted');
  }
  const [after] = await sql`select held_micros::int as held from kiln_private.budget_periods where pool_id = ${o.id}`;
  assert.equal(after!.held - before!.held, 2 * IMAGE, 'the pool holds only the accepted');
  const [k] = await sql`select held_micros::int as held from kiln_private.key_budget_periods where key_id = ${dave.id}`;
  assert.equal(k!.held, 2 * IMAGE, 'the key holds only the accepted');
});

test('a cancel or a failure releases the end user\'s hold; a settlement moves it to used at the actual cost', async () => {
  const o = await owner();
  await put(o.key, 'erin', { budgetMicros: 2 * IMAGE, period: 'month' });
  const a = await image(o.key, 'erin');
  const b = await image(o.key, 'erin');
  assert.deepEqual([a.status, b.status], [202, 202]);
  assert.equal((await image(o.key, 'erin')).status, 429);
  // Cancel one (the API's path), release the other as a failing generation does.
  assert.equal((await api(srv.base, o.key, `/generations/${a.body.id}/cancel`, { method: 'POST' })).status, 200);
  let v = (await get(o.key, 'erin')).body;
  assert.deepEqual({ used: v.usedMicros, held: v.heldMicros, remaining: v.remainingMicros }, { used: IMAGE, held: IMAGE, remaining: IMAGE });
  const [c] = await sql`select charge_id from kiln_private.generations where id = ${b.body.id}`;
  await sql`select kiln.release_charge(${c!.charge_id})`;
  v = (await get(o.key, 'erin')).body;
  assert.deepEqual({ used: v.usedMicros, held: v.heldMicros, remaining: v.remainingMicros }, { used: 0, held: 0, remaining: 2 * IMAGE });
  // Room again: one more, settled at 400.
  const d = await image(o.key, 'erin');
  assert.equal(d.status, 202);
  const [c2] = await sql`select charge_id from kiln_private.generations where id = ${d.body.id}`;
  await sql`select kiln.settle_charge(${c2!.charge_id}, 400)`;
  await sql`select kiln.settle_charge(${c2!.charge_id}, 400)`; // idempotent
  v = (await get(o.key, 'erin')).body;
  assert.deepEqual({ used: v.usedMicros, held: v.heldMicros, remaining: v.remainingMicros }, { used: 400, held: 0, remaining: 2 * IMAGE - 400 });
  assert.deepEqual((await ledger(o.id, 'erin')).table, { held: 0, settled: 400 });
});

test('periods: day is the UTC day, month the calendar month (UTC); a new cap counts what the end user spent in its period already', async () => {
  const o = await owner();
  // Without a cap: the same shape, this month's use, budgetMicros null — never 404.
  const none = await get(o.key, 'frank');
  assert.equal(none.status, 200);
  const now = new Date();
  const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString().replace('.000Z', 'Z');
  const dayStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())).toISOString().replace('.000Z', 'Z');
  assert.deepEqual(none.body, { endUser: 'frank', budgetMicros: null, period: 'month', rpm: null, periodStart: monthStart,
    usedMicros: 0, heldMicros: 0, remainingMicros: null, updatedAt: null });
  assert.equal((await image(o.key, 'frank')).status, 202);
  // An older settled charge of this month (not today), as if made earlier: counted by month, not by day.
  const firstOfMonth = now.getUTCDate() === 1 ? null : new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1, 12));
  if (firstOfMonth) {
    await sql`insert into kiln_private.charges (account_id, pool_id, period_start, model_id, origin, reserved_micros, status, settled_micros,
        created_at, finished_at, end_user)
      select ${o.id}, ${o.id}, period_start, model_id, origin, 700, 'settled', 700, ${firstOfMonth}, ${firstOfMonth}, 'frank'
      from kiln_private.charges where pool_id = ${o.id} and end_user = 'frank' limit 1`;
  }
  const older = firstOfMonth ? 700 : 0;
  const noCap = (await get(o.key, 'frank')).body;
  assert.deepEqual({ used: noCap.usedMicros, held: noCap.heldMicros }, { used: IMAGE + older, held: IMAGE });

  const month = await put(o.key, 'frank', { budgetMicros: 5000, period: 'month' });
  assert.equal(month.status, 200);
  assert.equal(month.body.periodStart, monthStart);
  assert.deepEqual({ used: month.body.usedMicros, held: month.body.heldMicros, remaining: month.body.remainingMicros, budget: month.body.budgetMicros },
    { used: IMAGE + older, held: IMAGE, remaining: 5000 - IMAGE - older, budget: 5000 });
  const day = await put(o.key, 'frank', { budgetMicros: 1500, period: 'day' });
  assert.equal(day.body.periodStart, dayStart);
  assert.equal(day.body.period, 'day');
  assert.deepEqual({ used: day.body.usedMicros, remaining: day.body.remainingMicros }, { used: IMAGE, remaining: 500 }, 'the day counts today only');
  // 1000 used of 1500 today: another image does not fit.
  const refused = await image(o.key, 'frank');
  assert.equal(refused.status, 429);
  assert.equal(refused.body.error.message, 'end user "frank"\'s budget for this day is exhausted');
  // The open reservation is held on the day's row now: releasing it frees the day.
  await sql`select kiln.release_charge(id) from kiln_private.charges where pool_id = ${o.id} and end_user = 'frank' and status = 'reserved'`;
  const freed = (await get(o.key, 'frank')).body;
  assert.deepEqual({ used: freed.usedMicros, held: freed.heldMicros }, { used: 0, held: 0 });
  assert.equal((await image(o.key, 'frank')).status, 202);
  // Removed: the end user is bound by the pool alone again, and GET shows this month's use.
  assert.equal((await del(o.key, 'frank')).status, 204);
  assert.equal((await del(o.key, 'frank')).status, 404);
  const gone = (await get(o.key, 'frank')).body;
  assert.equal(gone.budgetMicros, null);
  assert.equal(gone.usedMicros, IMAGE + older);
  assert.equal((await image(o.key, 'frank')).status, 202);
});

test('validation: every problem with a pointer, the path segment as a body\'s endUser, nothing stored', async () => {
  const o = await owner();
  const bad = await put(o.key, 'gina', { budgetMicros: -1, period: 'week', rpm: 0, extra: 1 });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.type, 'invalid_request');
  assert.deepEqual(bad.body.error.details.map((d: any) => d.path), ['/budgetMicros', '/period', '/rpm', '/extra']);
  assert.match(bad.body.error.message, /^budgetMicros: /);
  const missing = await put(o.key, 'gina', {});
  assert.deepEqual(missing.body.error.details, [{ path: '/budgetMicros', message: 'is required' }, { path: '/period', message: 'is required' }]);
  for (const body of [{ budgetMicros: 1.5, period: 'day' }, { budgetMicros: '100', period: 'day' }, { budgetMicros: 1, period: 'day', rpm: 2.5 }, [1], '"x"', 'null']) {
    const r = await put(o.key, 'gina', body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.ok(r.body.error.details?.length >= 1, JSON.stringify(r.body));
  }
  const notJson = await api(srv.base, o.key, '/end-users/gina', { method: 'PUT', body: '{', headers: { 'content-type': 'application/json' } });
  assert.equal(notJson.status, 400);
  for (const seg of ['x'.repeat(129), '%01abc', '%E2%80%A8', '%E0%A4%A']) {
    const r = await api(srv.base, o.key, `/end-users/${seg}`, { method: 'PUT', body: { budgetMicros: 1, period: 'day' } });
    assert.equal(r.status, 400, seg);
    assert.equal(r.body.error.type, 'invalid_request');
    // A malformed escape is refused by the server before the route (no details); the rest name the segment.
    if (seg !== '%E0%A4%A') assert.equal(r.body.error.details?.[0]?.path, '/endUser', `${seg}: ${JSON.stringify(r.body)}`);
    assert.equal((await api(srv.base, o.key, `/end-users/${seg}`)).status, 400);
    assert.equal((await api(srv.base, o.key, `/end-users/${seg}`, { method: 'DELETE' })).status, 400);
  }
  const [{ n }] = await sql`select count(*)::int as n from kiln_private.end_user_budgets where pool_id = ${o.id}`;
  assert.equal(n, 0, 'nothing stored');
  // A segment is URL-decoded: "a b/c" is the end user requests name with endUser "a b/c"; 128 characters are fine.
  const spaced = await put(o.key, 'a b/c', { budgetMicros: 0, period: 'day', rpm: null });
  assert.equal(spaced.status, 200);
  assert.equal(spaced.body.endUser, 'a b/c');
  const r = await image(o.key, 'a b/c');
  assert.equal(r.status, 429, 'a cap of 0 refuses every request that spends');
  assert.equal((await put(o.key, 'é'.repeat(128), { budgetMicros: 0, period: 'month' })).status, 200);
});

test('scopes and isolation: read keys read but cannot change; another account never sees or changes a cap; a workspace key acts on the workspace', async () => {
  const o = await owner();
  await put(o.key, 'hana', { budgetMicros: 5000, period: 'month', rpm: 10 });
  const reader = await createKey(sql, o.id, { scopes: ['read'] });
  const writer = await createKey(sql, o.id, { scopes: ['read', 'write'] });
  for (const k of [reader.key, writer.key]) {
    const p = await put(k, 'hana', { budgetMicros: 1, period: 'day' });
    assert.equal(p.status, 403);
    assert.equal(p.body.error.type, 'insufficient_scope');
    assert.equal((await del(k, 'hana')).status, 403);
  }
  assert.equal((await get(reader.key, 'hana')).body.budgetMicros, 5000, 'a read key reads');
  assert.equal((await api(srv.base, null, '/end-users/hana')).status, 401);

  const other = await owner();
  const seen = await get(other.key, 'hana');
  assert.equal(seen.status, 200);
  assert.equal(seen.body.budgetMicros, null, 'another account\'s "hana" is another end user');
  assert.equal((await del(other.key, 'hana')).status, 404);
  await put(other.key, 'hana', { budgetMicros: 1, period: 'day' });
  assert.equal((await get(o.key, 'hana')).body.budgetMicros, 5000, 'untouched by the other account');

  // A workspace-bound key: the workspace's pool, apart from the member's personal one.
  const [ws] = await sql`select * from kiln.create_workspace('Studio', ${o.id})`;
  await sql`select kiln.set_workspace_plan(${ws!.id}, 'active', 100000000, true)`;
  const wsKey = await createKey(sql, o.id, { scopes: ['read', 'write', 'keys'], workspaceId: ws!.id });
  assert.equal((await get(wsKey.key, 'hana')).body.budgetMicros, null);
  await put(wsKey.key, 'hana', { budgetMicros: IMAGE, period: 'month' });
  assert.equal((await image(wsKey.key, 'hana')).status, 202);
  const refused = await image(wsKey.key, 'hana');
  assert.equal(refused.status, 429);
  assert.match(refused.body.error.message, /end user "hana"/);
  assert.equal((await image(o.key, 'hana')).status, 202, 'the personal pool\'s cap is its own');
  const [row] = await sql`select pool_id from kiln_private.end_user_budgets where pool_id = ${ws!.id} and end_user = 'hana'`;
  assert.ok(row);

  // A member who left: its workspace-bound key neither reads nor changes the workspace's caps.
  const m = await createAccount(sql);
  await sql`select kiln.add_workspace_member(${ws!.id}, ${m.id}, 'admin')`;
  const mKey = await createKey(sql, m.id, { scopes: ['read', 'write', 'keys'], workspaceId: ws!.id });
  assert.equal((await get(mKey.key, 'hana')).body.budgetMicros, IMAGE, 'a member reads the workspace\'s cap');
  await sql`select kiln.remove_workspace_member(${ws!.id}, ${m.id})`;
  for (const r of [await get(mKey.key, 'hana'), await put(mKey.key, 'hana', { budgetMicros: 1, period: 'day' }), await del(mKey.key, 'hana')]) {
    assert.equal(r.status, 404, JSON.stringify(r.body));
  }
  assert.equal((await get(wsKey.key, 'hana')).body.budgetMicros, IMAGE, 'the cap is untouched');
});

test('rpm per end user: the (rpm+1)th quick request gets 429 rate_limited with Retry-After; another end user is fine', async () => {
  const o = await owner();
  await put(o.key, 'ivan', { budgetMicros: 1_000_000, period: 'day', rpm: 3 });
  const res = [];
  for (let i = 0; i < 4; i++) res.push(await image(o.key, 'ivan'));
  assert.deepEqual(res.map((r) => r.status), [202, 202, 202, 429]);
  const over = res[3]!;
  assert.equal(over.body.error.type, 'rate_limited');
  assert.match(over.body.error.message, /end user "ivan"/);
  const retry = Number(over.headers.get('retry-after'));
  assert.ok(retry >= 1 && retry <= 20, `retry-after ${retry}`);
  assert.ok(over.body.error.message.includes(`Retry after ${retry} second`));
  // Refused by its rate: nothing reserved or stored for it.
  assert.equal((await ledger(o.id, 'ivan')).charges.n, 3);
  // Another end user, and requests without one, are unaffected; so is the large-body path (images).
  for (let i = 0; i < 5; i++) assert.equal((await image(o.key, 'jane')).status, 202);
  assert.equal((await image(o.key)).status, 202);
  const big = await api(srv.base, o.key, '/generations', {
    body: { type: 'image', prompt: 'p', endUser: 'ivan', images: [{ url: 'https://example.com/a.png' }] },
  });
  assert.ok(big.status === 429 || big.status === 400, `${big.status}`);
  if (big.status === 429) assert.equal(big.body.error.type, 'rate_limited');
});

test('audit: end_user.budget_set with the new settings and the old, end_user.budget_removed; an unchanged PUT writes none', async () => {
  const o = await owner();
  await put(o.key, 'kim', { budgetMicros: 1000, period: 'day' });
  await put(o.key, 'kim', { budgetMicros: 2000, period: 'month', rpm: 5 });
  await put(o.key, 'kim', { budgetMicros: 2000, period: 'month', rpm: 5 });
  await del(o.key, 'kim');
  const set = (await api(srv.base, o.key, '/audit?action=end_user.budget_set')).body.data;
  assert.equal(set.length, 2);
  assert.equal(set[0].target.type, 'end_user');
  assert.equal(set[0].target.id, 'kim');
  assert.equal(set[0].actor.type, 'key');
  assert.equal(set[0].actor.id, o.keyId);
  assert.deepEqual(set[0].details, { endUser: 'kim', budgetMicros: 2000, period: 'month', rpm: 5, previous: { budgetMicros: 1000, period: 'day', rpm: null } });
  assert.deepEqual(set[1].details, { endUser: 'kim', budgetMicros: 1000, period: 'day', rpm: null, previous: null });
  const removed = (await api(srv.base, o.key, '/audit?action=end_user.budget_removed')).body.data;
  assert.equal(removed.length, 1);
  assert.deepEqual(removed[0].details, { endUser: 'kim', previous: { budgetMicros: 2000, period: 'month', rpm: 5 } });
});

test('a reservation made at start (a run output, a batch line: kiln.reserve_budget) counts against the end user\'s cap too', async () => {
  const o = await owner();
  await put(o.key, 'lena', { budgetMicros: IMAGE, period: 'month' });
  const reserve = () => sql`select id from kiln.reserve_budget(${o.id}::uuid, null::uuid, null::uuid, 'fal/flux-schnell', 'workflow', ${IMAGE}::bigint,
    null::uuid, null::uuid, null::text, 'lena')`;
  const [c] = await reserve();
  const [row] = await sql`select end_user, end_user_period is not null as capped from kiln_private.charges where id = ${c!.id}`;
  assert.deepEqual({ ...row }, { end_user: 'lena', capped: true });
  await assert.rejects(reserve(), (e: any) => e.code === 'KQ001' && e.message === 'end user "lena"\'s budget for this month is exhausted');
  // Without an end user (the nine-argument call of before), only the pool decides.
  await sql`select kiln.reserve_budget(${o.id}::uuid, null::uuid, null::uuid, 'fal/flux-schnell', 'workflow', ${IMAGE}::bigint)`;
});

test('batch lines reserve on their end user\'s cap when they start: past it they fail insufficient_quota naming the end user, uncharged', async (t) => {
  const o = await owner();
  await put(o.key, 'bea', { budgetMicros: 2 * IMAGE, period: 'day' });
  const line = (i: number, endUser: string) => JSON.stringify({ custom_id: `${endUser}-${i}`, method: 'POST', url: '/api/v1/generations', body: { type: 'image', prompt: `line ${i}`, endUser } });
  const body = [...[1, 2, 3, 4, 5].map((i) => line(i, 'bea')), line(1, 'cy'), line(2, 'cy')].join('\n');
  const res = await fetch(`${srv.base}/batches`, { method: 'POST', headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/jsonl' }, body });
  assert.equal(res.status, 202, await res.clone().text());
  const batch = (await res.json()) as { id: string };
  const worker = await startTestWorker(srv);
  t.after(() => worker.stop());
  await until('the batch completed', async () => (await api(srv.base, o.key, `/batches/${batch.id}`)).body.status === 'completed', 30_000);
  const lines = await sql`select end_user, status, error from kiln_private.generations where batch_id = ${batch.id} order by end_user, batch_line`;
  const of = (who: string, status: string) => lines.filter((l) => l.end_user === who && l.status === status);
  assert.equal(of('bea', 'completed').length, 2, JSON.stringify(lines));
  assert.equal(of('bea', 'failed').length, 3);
  for (const l of of('bea', 'failed')) assert.equal(l.error, 'insufficient_quota: end user "bea"\'s budget for this day is exhausted');
  assert.equal(of('cy', 'completed').length, 2, 'another end user of the same batch is unaffected');
  const a = await ledger(o.id, 'bea');
  assert.deepEqual(a.charges, { held: 0, settled: 2 * IMAGE, n: 2, capped: 2 });
  assert.deepEqual(a.table, { held: 0, settled: 2 * IMAGE });
});

test('a workflow run for an end user whose cap is used up is refused when it starts, naming the end user; others run', async () => {
  const o = await owner();
  await put(o.key, 'rune', { budgetMicros: IMAGE, period: 'month' });
  const wf = await saveWorkflow(srv, o.id, {
    nodes: [{ id: 'p', kind: 'prompt', output: 'image', prompt: 'a kiln' }, { id: 'o', kind: 'output', label: 'Image' }],
    edges: [{ from: 'p', to: 'o' }],
  });
  const run = (endUser: string) => api(srv.base, o.key, `/workflows/${wf}/runs`, { body: { endUser } });
  assert.equal((await image(o.key, 'rune')).status, 202, 'the cap is used up by one image');
  const refused = await run('rune');
  assert.equal(refused.status, 429, JSON.stringify(refused.body));
  assert.equal(refused.body.error.type, 'insufficient_quota');
  assert.equal(refused.body.error.message, 'end user "rune"\'s budget for this month is exhausted');
  const [n] = await sql`select count(*)::int as n from kiln_private.workflow_runs where account_id = ${o.id}`;
  assert.equal(n!.n, 0, 'nothing stored');
  assert.equal((await run('other')).status, 202);
});

test('typed client: endUsers.set / get / remove, with the end user URL-encoded and typed KilnErrors', async () => {
  const o = await owner();
  const c = createKilnClient({ baseUrl: srv.origin, apiKey: o.key });
  const set = await c.endUsers.set('m/é ?#', { budgetMicros: 3000, period: 'day', rpm: 2 });
  assert.deepEqual({ endUser: set.endUser, budget: set.budgetMicros, period: set.period, rpm: set.rpm }, { endUser: 'm/é ?#', budget: 3000, period: 'day', rpm: 2 });
  const got = await c.endUsers.get('m/é ?#');
  assert.equal(got.remainingMicros, 3000);
  await c.endUsers.remove('m/é ?#');
  await assert.rejects(c.endUsers.remove('m/é ?#'), (e: unknown) => e instanceof KilnError && e.status === 404 && e.type === 'not_found');
  await assert.rejects(c.endUsers.set('x', { budgetMicros: -1, period: 'day' }),
    (e: unknown) => e instanceof KilnError && e.status === 400 && e.details[0]?.path === '/budgetMicros');
});

test('CLI: kiln end-user set / get / rm, as JSON lines, with exit codes for what the service refused', async () => {
  const o = await owner();
  const env = { KILN_URL: `${srv.origin}/api/v1/`, KILN_API_KEY: o.key };
  const set = await cli(['end-user', 'set', 'nora', '--budget-usd', '2.5', '--period', 'day', '--rpm', '30'], env);
  assert.equal(set.code, 0, set.stderr);
  assert.deepEqual({ ...set.lines[0], periodStart: undefined, updatedAt: undefined }, { event: 'set', endUser: 'nora', budgetMicros: 2_500_000, period: 'day', rpm: 30,
    periodStart: undefined, usedMicros: 0, heldMicros: 0, remainingMicros: 2_500_000, updatedAt: undefined });
  const micros = await cli(['end-user', 'set', 'nora', '--budget', '1000', '--period', 'month'], env);
  assert.equal(micros.lines[0].budgetMicros, 1000);
  assert.equal(micros.lines[0].rpm, null, 'a PUT sets every field: no --rpm, no rpm');
  const got = await cli(['end-user', 'get', 'nora'], env);
  assert.equal(got.code, 0);
  assert.equal(got.lines[0].remainingMicros, 1000);
  assert.equal((await cli(['end-user', 'rm', 'nora'], env)).code, 0);
  const again = await cli(['end-user', 'rm', 'nora'], env);
  assert.equal(again.code, 2, 'a 404 is a usage exit');
  assert.match(again.stderr, /not_found 404: end user "nora" has no budget/);
  const bad = await cli(['end-user', 'set', 'nora', '--budget', '5', '--budget-usd', '1', '--period', 'day'], env);
  assert.equal(bad.code, 2);
  assert.equal((await cli(['end-user', 'set', 'nora', '--budget', '5', '--period', 'week'], env)).code, 2);
  const readOnly = await cli(['end-user', 'set', 'nora', '--budget', '5', '--period', 'day'], { ...env, KILN_API_KEY: (await createKey(sql, o.id, { scopes: ['read'] })).key });
  assert.equal(readOnly.code, 3);
  const help = await cli(['--help'], env);
  assert.match(help.stdout + help.stderr, /end-user/);
});
