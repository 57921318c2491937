// Kiln's SQL uses only graphile-worker's public surface (the graphile_worker.jobs view, add_jobs,
// force_unlock_workers, …): its _private_* tables change between versions, and a function that
// names one would break on an upgrade. The one allowed exception is the enqueue bypass, kept only
// while its measured gain holds (see kiln_private.enqueue_new_generations and BENCH.md).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestDb } from './_setup.ts';

/** Functions allowed to name graphile-worker's private tables (at most one). */
const ALLOWED = ['kiln_private.enqueue_new_generations'];

test('no function or view in kiln / kiln_private names graphile_worker._private_*, except at most the enqueue bypass', async () => {
  const { sql } = await createTestDb();
  const functions = await sql`
    select n.nspname || '.' || p.proname as name from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname in ('kiln', 'kiln_private') and p.prosrc ~* 'graphile_worker\\s*\\.\\s*"?_private_'
    order by 1`;
  const names = functions.map((f) => f.name as string);
  assert.ok(names.length <= 1, `at most one function may name a private table: ${names.join(', ')}`);
  assert.deepEqual(names.filter((n) => !ALLOWED.includes(n)), [], 'only the enqueue bypass may name a private table');

  const views = await sql`
    select schemaname || '.' || viewname as name from pg_views
    where schemaname in ('kiln', 'kiln_private') and definition ~* 'graphile_worker\\s*\\.\\s*"?_private_'`;
  assert.deepEqual(views.map((v) => v.name), []);

  // The check itself sees a function that names one (it would fail on such a migration).
  await sql`create function kiln_private.test_names_private() returns bigint language sql as 'select count(*) from graphile_worker._private_jobs'`;
  const [{ n }] = await sql`
    select count(*)::int as n from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'kiln_private' and p.proname = 'test_names_private' and p.prosrc ~* 'graphile_worker\\s*\\.\\s*"?_private_'`;
  assert.equal(n, 1);
});
