// kiln.start_generations (POST /generations in one call) and kiln.poll_generations (GET in one
// call): every request of a batch gets its own authorization and business outcome, budgets are
// decided in arrival order per pool, and only admitted requests leave rows behind.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { hashKey } from '../src/auth/secrets.ts';
import { pgArray, ARRAY_OID } from '../src/db/pool.ts';
import { createAccount, createKey, createTestDb, type TestDb } from './_setup.ts';

let db: TestDb;
let imageModel: { id: string; v: string };
before(async () => {
  db = await createTestDb();
  const [m] = await db.sql`select id, (extract(epoch from updated_at) * 1000000)::bigint::text as v from kiln_private.models where id = 'local/sketch'`;
  imageModel = m as any;
});

interface Req {
  key: string;
  reserve: number;
  type?: string;
  model?: string;
  version?: string | null;
}

function start(reqs: Req[]) {
  const sql = db.sql;
  return sql`select * from kiln.start_generations(
    ${pgArray(sql, reqs.map((r) => hashKey(r.key)), ARRAY_OID.bytea)}, 'api',
    ${pgArray(sql, reqs.map((r) => r.type ?? 'image'), ARRAY_OID.text)},
    ${pgArray(sql, reqs.map((r) => r.model ?? imageModel.id), ARRAY_OID.text)},
    ${pgArray(sql, reqs.map((r) => (r.version === undefined ? imageModel.v : r.version)), ARRAY_OID.int8)},
    ${pgArray(sql, reqs.map(() => JSON.stringify({ type: 'image', prompt: 'p' })), ARRAY_OID.text)}::jsonb[],
    ${pgArray(sql, reqs.map((r) => String(r.reserve)), ARRAY_OID.int8)}, 3) order by ord`;
}

async function ledger(accountId: string) {
  const [r] = await db.sql`
    select count(*)::int as n, coalesce(sum(c.reserved_micros), 0)::bigint::text as held,
           count(g.id)::int as gens, count(j.id)::int as jobs
    from kiln_private.charges c
    left join kiln_private.generations g on g.charge_id = c.id
    left join graphile_worker._private_jobs j on j.key = g.id::text
    where c.account_id = ${accountId}`;
  return r;
}

test('one batch: every request gets its own authorization and business outcome', async () => {
  const ok = await createAccount(db.sql, { budgetMicros: null });
  const okKey = (await createKey(db.sql, ok.id)).key;
  const readOnly = (await createKey(db.sql, ok.id, { scopes: ['read'] })).key;
  const revoked = await createKey(db.sql, ok.id);
  await db.sql`select kiln.revoke_api_key(${revoked.id})`;
  const blocked = await createAccount(db.sql, { tier: 'blocked' });
  const blockedKey = (await createKey(db.sql, blocked.id)).key;
  const limited = (await createKey(db.sql, ok.id, { rpm: 1 })).key;

  const rows = await start([
    { key: okKey, reserve: 1000 },
    { key: readOnly, reserve: 1000 },
    { key: revoked.key, reserve: 1000 },
    { key: 'kiln_live_' + 'x'.repeat(40), reserve: 1000 },
    { key: blockedKey, reserve: 1000 },
    { key: okKey, reserve: 1000, model: 'no/such-model' },
    { key: okKey, reserve: 1000, type: 'code' },
    { key: okKey, reserve: 1000, version: '1' },
    { key: limited, reserve: 1000 },
    { key: limited, reserve: 1000 },
  ]);
  const got = rows.map((r) => [r.status, r.error_code ?? (r.id ? 'id' : null)]);
  assert.deepEqual(got, [
    ['ok', 'id'],
    ['insufficient_scope', null],
    ['unauthorized', null],
    ['unauthorized', null],
    ['ok', 'KQ001'],
    ['ok', 'KI001'],
    ['ok', 'KI001'],
    ['ok', 'KS001'],
    ['ok', 'id'],
    ['rate_limited', null],
  ]);
  assert.ok(rows[9]!.retry_after >= 1);
  for (const r of rows.filter((x) => x.status !== 'ok')) assert.equal(r.id, null);
  // Exactly the two admitted requests left a charge, a generation and a job behind.
  assert.deepEqual(await ledger(ok.id), { n: 2, held: '2000', gens: 2, jobs: 2 });
  assert.deepEqual(await ledger(blocked.id), { n: 0, held: '0', gens: 0, jobs: 0 });
  const [bp] = await db.sql`select held_micros::text as held from kiln_private.budget_periods where pool_id = ${ok.id}`;
  assert.equal(bp!.held, '2000');
});

test('a pool that cannot take the batch total is decided in arrival order; others are unaffected', async () => {
  const tight = await createAccount(db.sql, { budgetMicros: 900 });
  const tightKey = (await createKey(db.sql, tight.id)).key;
  const roomy = await createAccount(db.sql, { budgetMicros: 10_000 });
  const roomyKey = (await createKey(db.sql, roomy.id)).key;
  const rows = await start([
    { key: tightKey, reserve: 600 },
    { key: roomyKey, reserve: 4000 },
    { key: tightKey, reserve: 600 },
    { key: tightKey, reserve: 300 },
    { key: roomyKey, reserve: 4000 },
  ]);
  assert.deepEqual(rows.map((r) => r.error_code ?? 'id'), ['id', 'id', 'KQ001', 'id', 'id']);
  assert.deepEqual(await ledger(tight.id), { n: 2, held: '900', gens: 2, jobs: 2 });
  assert.deepEqual(await ledger(roomy.id), { n: 2, held: '8000', gens: 2, jobs: 2 });
});

test('workspace keys draw on the Team pool; a lapsed plan or a departed owner is KP001', async () => {
  const owner = await createAccount(db.sql);
  const member = await createAccount(db.sql);
  const [ws] = await db.sql`select * from kiln.create_workspace('Batch studio', ${owner.id})`;
  await db.sql`select kiln.add_workspace_member(${ws!.id}, ${member.id}, 'admin')`;
  await db.sql`select kiln.set_workspace_plan(${ws!.id}, 'active', 5000, true)`;
  const ownerKey = (await createKey(db.sql, owner.id, { workspaceId: ws!.id })).key;
  const memberKey = (await createKey(db.sql, member.id, { workspaceId: ws!.id })).key;
  let rows = await start([{ key: ownerKey, reserve: 2000 }, { key: memberKey, reserve: 2000 }, { key: memberKey, reserve: 2000 }]);
  assert.deepEqual(rows.map((r) => r.error_code ?? 'id'), ['id', 'id', 'KQ001']);
  const [pool] = await db.sql`select held_micros::text as held from kiln_private.budget_periods where pool_id = ${ws!.id}`;
  assert.equal(pool!.held, '4000');
  await db.sql`select kiln.remove_workspace_member(${ws!.id}, ${member.id})`;
  rows = await start([{ key: memberKey, reserve: 100 }, { key: ownerKey, reserve: 100 }]);
  assert.deepEqual(rows.map((r) => r.error_code ?? 'id'), ['KP001', 'id']);
  await db.sql`select kiln.set_workspace_plan(${ws!.id}, 'lapsed', null, false)`;
  rows = await start([{ key: ownerKey, reserve: 100 }]);
  assert.deepEqual(rows.map((r) => r.error_code ?? 'id'), ['KP001']);
});

test('concurrent batches on the same pools never overspend (ledger-checked)', async () => {
  const a = await createAccount(db.sql, { budgetMicros: 100_000 });
  const b = await createAccount(db.sql, { budgetMicros: 100_000 });
  const ka = (await createKey(db.sql, a.id)).key;
  const kb = (await createKey(db.sql, b.id)).key;
  // 30 batches of 6 requests racing, the two pools interleaved within each batch: 33 reservations
  // of 3,000 fit into each budget of 100,000.
  await Promise.all(Array.from({ length: 30 }, () => start(Array.from({ length: 6 }, (_, i) => ({ key: i % 2 ? ka : kb, reserve: 3000 })))));
  for (const acct of [a, b]) {
    const l = await ledger(acct.id);
    assert.equal(l.n, 33);
    assert.equal(l.held, '99000');
    assert.equal(l.gens, 33);
    assert.equal(l.jobs, 33);
  }
});

test('poll_generations: the key is authorized and only its own account\'s API generations are visible', async () => {
  const a = await createAccount(db.sql, { budgetMicros: null });
  const ka = (await createKey(db.sql, a.id)).key;
  const other = await createAccount(db.sql);
  const ko = (await createKey(db.sql, other.id)).key;
  const [created] = await start([{ key: ka, reserve: 10 }]);
  const poll = (keys: string[], ids: string[]) => db.sql`select * from kiln.poll_generations(
    ${pgArray(db.sql, keys.map((k) => hashKey(k)), ARRAY_OID.bytea)}, 1000,
    ${pgArray(db.sql, ids, ARRAY_OID.uuid)}, 'api') order by ord`;
  const rows = await poll([ka, ko, ka, 'kiln_live_' + 'y'.repeat(40)], [created!.id, created!.id, '00000000-0000-4000-8000-000000000000', created!.id]);
  assert.deepEqual(rows.map((r) => [r.status, r.body?.status ?? null]), [
    ['ok', 'pending'],
    ['ok', null],
    ['ok', null],
    ['unauthorized', null],
  ]);
  assert.equal(rows[0]!.body.id, created!.id);
  // Another origin's generation is invisible to the REST poll.
  const mcp = await db.sql`select * from kiln.poll_generations(${pgArray(db.sql, [hashKey(ka)], ARRAY_OID.bytea)}, 1000, ${pgArray(db.sql, [created!.id], ARRAY_OID.uuid)}, 'mcp')`;
  assert.equal(mcp[0]!.body, null);
});
