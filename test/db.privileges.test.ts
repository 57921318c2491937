// Least privilege in the database (docs/security.md and docs/operators.md, "Database roles"):
// every function of every schema Kiln creates is executable only by the roles that must call it —
// never by PUBLIC, a fresh login or kiln_analyst, and that holds for functions added later too;
// every SECURITY DEFINER function pins its search_path; kiln_app owns nothing and may change no
// table of Kiln's directly but the one an invoker function it calls writes.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import postgres from 'postgres';
import { createAccount, createTestDb, onCleanup, type TestDb } from './_setup.ts';

const SCHEMAS = ['kiln', 'kiln_private', 'graphile_worker', 'graphile_migrate'];
/** Functions kiln_app may execute outside schema kiln (and graphile_worker, the queue it is a client of). */
const APP_PRIVATE = ['kiln_private.trim_upstream_minutes()'];
/** Functions of schema kiln that are the owner's alone. */
const OWNER_ONLY = ['kiln.set_audit_retention(interval)'];

let db: TestDb;
const suffix = `${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
const fresh = `fresh_${suffix}`;
const analyst = `analyst_${suffix}`;
const password = Math.random().toString(36).slice(2);

function as(role: string) {
  const u = new URL(db.ownerUrl);
  u.username = role;
  u.password = password;
  const sql = postgres(u.toString(), { max: 1, onnotice: () => {} });
  onCleanup(() => sql.end({ timeout: 1 }));
  return sql;
}

before(async () => {
  db = await createTestDb();
  await db.sql.unsafe(`create role ${fresh} login password '${password}'`);
  await db.sql.unsafe(`create role ${analyst} login password '${password}' in role kiln_analyst`);
  onCleanup(async () => {
    for (const r of [fresh, analyst]) await db.sql.unsafe(`drop role if exists ${r}`).catch(() => {});
  });
});

/** Every function of Kiln's schemas (not an extension's), with whether `role` may execute it. */
async function executable(role: string) {
  return db.sql<Array<{ fn: string; ok: boolean; schema: string; definer: boolean; config: string[] | null }>>`
    select p.oid::regprocedure::text as fn, n.nspname as schema, p.prosecdef as definer, p.proconfig as config,
           has_function_privilege(${role}, p.oid, 'EXECUTE') as ok
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = any (${SCHEMAS})
      and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
    order by 1`;
}

test('no function of Kiln\'s is executable by PUBLIC, a fresh login or a kiln_analyst member', async () => {
  const all = await executable(fresh);
  assert.ok(all.length > 200, `found ${all.length} functions`);
  assert.ok(all.some((f) => f.schema === 'graphile_worker'), 'the queue\'s functions are enumerated too');
  assert.deepEqual(all.filter((f) => f.ok).map((f) => f.fn), [], 'executable by a login with no grants (PUBLIC)');
  const [{ n }] = await db.sql`
    select count(*)::int as n from pg_proc p join pg_namespace n on n.oid = p.pronamespace, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
    where n.nspname = any (${SCHEMAS}) and a.grantee = 0 and a.privilege_type = 'EXECUTE'
      and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')`;
  assert.equal(n, 0, 'no EXECUTE granted to PUBLIC in any ACL');
  assert.deepEqual((await executable(analyst)).filter((f) => f.ok).map((f) => f.fn), [], 'executable by kiln_analyst');
});

test('as an analyst, kiln.set_account_admin and the admin functions are refused (42501)', async () => {
  const a = await createAccount(db.sql);
  const alice = as(analyst);
  for (const q of [
    alice`select kiln.set_account_admin(${a.id}::uuid, true)`,
    alice`select kiln.admin_update_account(${a.id}::uuid, ${a.id}::uuid, 'pro', null, false)`,
    alice`select kiln.admin_list_accounts(10, null, null, null)`,
    alice`select kiln.admin_set_model_enabled(${a.id}::uuid, 'local/sketch', false)`,
  ]) {
    await assert.rejects(q, (e: any) => e.code === '42501');
  }
  const [{ is_admin }] = await db.sql`select is_admin from kiln_private.accounts where id = ${a.id}`;
  assert.equal(is_admin, false);
  // Nor can a login with no grants reach schema kiln at all.
  await assert.rejects(as(fresh)`select kiln.set_account_admin(${a.id}::uuid, true)`, (e: any) => e.code === '42501');
});

test('a function the owner adds later is not PUBLIC\'s either (default privileges), in any schema', async () => {
  const rollback = new Error('rolled back: nothing kept');
  await assert.rejects(db.sql.begin(async (tx) => {
    for (const s of ['kiln', 'kiln_private', 'public']) {
      await tx.unsafe(`create function ${s}.later_${suffix}() returns int language sql as 'select 1'`);
      const [r] = await tx.unsafe(`select has_function_privilege('${fresh}', '${s}.later_${suffix}()', 'EXECUTE') as pub,
                                          has_function_privilege('kiln_app', '${s}.later_${suffix}()', 'EXECUTE') as app`);
      assert.equal(r!.pub, false, `${s}: PUBLIC`);
      assert.equal(r!.app, s === 'kiln', `${s}: kiln_app executes what is added to kiln, nothing else`);
    }
    throw rollback;
  }), (e) => e === rollback);
});

test('every SECURITY DEFINER function pins its search_path', async () => {
  const all = await executable(fresh);
  const loose = all.filter((f) => f.definer && !(f.config ?? []).some((c) => /^search_path=pg_catalog, pg_temp$/.test(c)));
  assert.deepEqual(loose.map((f) => f.fn), []);
  assert.ok(all.filter((f) => f.definer).length > 100);
});

test('kiln_app executes the kiln functions and the queue\'s, and nothing else of Kiln\'s', async () => {
  const all = await executable('kiln_app');
  const kiln = all.filter((f) => f.schema === 'kiln');
  assert.deepEqual(kiln.filter((f) => !f.ok).map((f) => f.fn), OWNER_ONLY);
  assert.deepEqual(all.filter((f) => f.schema === 'kiln_private' && f.ok).map((f) => f.fn), APP_PRIVATE);
  assert.ok(all.filter((f) => f.schema === 'graphile_worker').every((f) => f.ok), 'the queue\'s client');
});

test('kiln_app owns nothing, cannot log in, and may change no table of Kiln\'s but the rate-limit buckets', async () => {
  const [role] = await db.sql`select rolcanlogin, rolsuper, rolcreaterole, rolcreatedb from pg_roles where rolname = 'kiln_app'`;
  assert.deepEqual({ ...role }, { rolcanlogin: false, rolsuper: false, rolcreaterole: false, rolcreatedb: false });
  const owned = await db.sql`
    select c.relname from pg_class c where pg_has_role('kiln_app', c.relowner, 'MEMBER')
    union all select p.proname from pg_proc p where pg_has_role('kiln_app', p.proowner, 'MEMBER')
    union all select n.nspname from pg_namespace n where pg_has_role('kiln_app', n.nspowner, 'MEMBER')`;
  assert.deepEqual([...owned], []);
  const writable = await db.sql`
    select c.relname, array_agg(p order by p) as privs
    from pg_class c join pg_namespace n on n.oid = c.relnamespace,
         unnest(array['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) p
    where n.nspname in ('kiln', 'kiln_private') and c.relkind in ('r', 'p', 'v', 'm')
      and has_table_privilege('kiln_app', c.oid, p)
    group by c.relname order by 1`;
  assert.deepEqual(writable.map((r) => [r.relname, r.privs]), [['rate_limit_buckets', ['INSERT', 'UPDATE']]]);
  const [{ reads }] = await db.sql`
    select array_agg(c.relname order by c.relname) as reads from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname in ('kiln', 'kiln_private') and c.relkind in ('r', 'p', 'v', 'm') and has_table_privilege('kiln_app', c.oid, 'SELECT')`;
  assert.deepEqual(reads, ['audit_log', 'models', 'rate_limit_buckets']);
});

test('the service in this suite runs as a kiln_app member that is neither superuser nor owner', async () => {
  const [r] = await db.app`select current_user as name, r.rolsuper as superuser,
                             pg_has_role(current_user, 'kiln_app', 'MEMBER') as app,
                             pg_has_role(current_user, n.nspowner, 'MEMBER') as owner
                           from pg_roles r, pg_namespace n where r.rolname = current_user and n.nspname = 'kiln'`;
  assert.deepEqual({ superuser: r!.superuser, app: r!.app, owner: r!.owner }, { superuser: false, app: true, owner: false });
});
