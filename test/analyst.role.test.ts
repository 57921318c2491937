// kiln_analyst: a person granted it (`grant kiln_analyst to alice`) reads the documented analyst
// views and nothing else — no key hashes, webhook secrets, prompts or stored bytes, no function
// that writes, no writes through the views (docs/analysts.md).

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import postgres from 'postgres';
import { createAccount, createKey, createTestDb, onCleanup, type TestDb } from './_setup.ts';

const VIEWS = ['audit_log', 'batches', 'daily_spend', 'daily_generations', 'daily_workflow_runs', 'generation_latency', 'generation_timings', 'models', 'provider_health', 'usage_by_end_user'];

let db: TestDb;
let alice: postgres.Sql;

/** The SQLSTATE a statement fails with as alice (null: it ran). */
async function refusal(text: string): Promise<string | null> {
  try {
    await alice.unsafe(text);
    return null;
  } catch (e: any) {
    return e.code ?? String(e);
  }
}

before(async () => {
  db = await createTestDb();
  const a = await createAccount(db.sql);
  await createKey(db.sql, a.id);
  const name = `alice_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const password = Math.random().toString(36).slice(2);
  // What an operator does: a login role of their own, then the one grant.
  await db.sql.unsafe(`create role ${name} login password '${password}'`);
  await db.sql.unsafe(`grant kiln_analyst to ${name}`);
  const u = new URL(db.url);
  u.username = name;
  u.password = password;
  alice = postgres(u.toString(), { max: 1, onnotice: () => {} });
  onCleanup(async () => {
    await alice.end({ timeout: 1 });
    await db.sql.unsafe(`drop owned by ${name}`).catch(() => {});
    await db.sql.unsafe(`drop role if exists ${name}`);
  });
});

test('kiln_analyst is a role nobody logs in as', async () => {
  const [r] = await db.sql`select rolcanlogin from pg_roles where rolname = 'kiln_analyst'`;
  assert.equal(r?.rolcanlogin, false);
});

test('an analyst reads every documented view', async () => {
  for (const v of VIEWS) {
    const rows = await alice.unsafe(`select * from kiln.${v} limit 5`);
    assert.ok(Array.isArray(rows), v);
  }
  const [m] = await alice`select count(*)::int as n from kiln.models`;
  assert.ok(m.n > 0, 'the catalog is visible');
});

test('no view an analyst reads has a column for hashes, secrets, prompts, requests or bytes', async () => {
  const cols = await alice`
    select table_name, column_name from information_schema.columns
    where table_schema = 'kiln' order by table_name, column_name`;
  const tables = new Set(cols.map((c) => c.table_name));
  assert.deepEqual([...tables].sort(), [...VIEWS].sort(), 'the analyst sees exactly the documented views');
  const bad = cols.filter((c) => /hash|secret|prompt|request(?!_id$)|content|bytes|password|api_?key/i.test(c.column_name));
  assert.deepEqual(bad, []);
  // An audit entry's request id is the X-Request-ID a client chose to name its request: no content.
  assert.ok(cols.some((c) => c.table_name === 'audit_log' && c.column_name === 'request_id'));
});

test('an analyst is refused the tables, the functions and any write', async () => {
  const refused = [
    'select key_hash from kiln_private.api_keys',
    'select * from kiln_private.generations',
    'select * from kiln_private.webhook_endpoints',
    'select * from kiln_private.objects',
    'select * from graphile_worker.jobs',
    // Security definer functions of the service: they would write as their owner.
    `select kiln.create_account('x@example.test', 'pro', null, true)`,
    `select * from kiln.authorize_requests(array['\\x00'::bytea], array['read'], array['read'], array[60], array[false])`,
    `select kiln.list_generations_for_callers(array[gen_random_uuid()], array[null::uuid], 'api', array[1], array[null::timestamptz], array[null::uuid], array[null::text], array[null::text], array[null::text], array[null::timestamptz])`,
    // kiln.models is a simple view, so updatable for whoever may write it: not the analyst.
    'update kiln.models set enabled = false',
    `insert into kiln.models (id) values ('x')`,
    'delete from kiln.models',
    'create table kiln.mine (x int)',
  ];
  for (const text of refused) {
    const code = await refusal(text);
    assert.ok(code === '42501' || code === '3F000', `${text}: refused for want of privilege, got ${code}`);
  }
  // The service's own role still calls what it owns.
  const [{ n }] = await db.sql`select count(*)::int as n from kiln.list_generations_for_callers(
    array[gen_random_uuid()], array[null::uuid], 'api', array[1], array[null::timestamptz], array[null::uuid],
    array[null::text], array[null::text], array[null::text], array[null::timestamptz])`;
  assert.equal(n, 1);
});
