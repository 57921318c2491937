// kiln_private.enqueue_new_generations writes graphile-worker's job rows itself (the one bypass of
// its public API, for speed: see the function's comment). This pins that to graphile-worker's
// table layout: a job queued through the bypass must be, column for column, what
// graphile_worker.add_jobs writes for a new key — a graphile-worker upgrade that adds or changes
// a column fails here, not in production.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { createTestDb } from './_setup.ts';

test('a job queued by the bypass is the row graphile_worker.add_jobs writes for a new key', async () => {
  const { sql } = await createTestDb();
  // The task row exists once anything was queued (the bypass falls back to add_jobs before that).
  const first = randomUUID();
  await sql`select kiln_private.enqueue_new_generations(array[${first}::uuid], 5)`;
  const viaBypass = randomUUID();
  const viaApi = randomUUID();
  await sql`select kiln_private.enqueue_new_generations(array[${viaBypass}::uuid], 5)`;
  await sql`select graphile_worker.add_jobs(array[row('generation__run', json_build_object('id', ${viaApi}::uuid), null, null, kiln_private.generation_job_attempts(), ${viaApi}, null, null)::graphile_worker.job_spec])`;
  const rows = await sql`select * from graphile_worker._private_jobs where key in (${viaBypass}, ${viaApi})`;
  assert.equal(rows.length, 2);
  const strip = (r: Record<string, unknown>) => {
    const { id: _id, key: _key, payload, run_at: _run, created_at: _c, updated_at: _u, ...rest } = r;
    return { ...rest, payloadKeys: Object.keys(payload as object) };
  };
  const [a, b] = [rows.find((r) => r.key === viaBypass)!, rows.find((r) => r.key === viaApi)!];
  assert.deepEqual(strip(a), strip(b));
  assert.deepEqual(a.payload, { id: viaBypass });
  // The columns the bypass relies on, with their types: a layout change must be looked at.
  const cols = await sql`
    select column_name, data_type from information_schema.columns
    where table_schema = 'graphile_worker' and table_name = '_private_jobs' order by ordinal_position`;
  assert.deepEqual(cols.map((c) => `${c.column_name} ${c.data_type}`), [
    'id bigint', 'job_queue_id integer', 'task_id integer', 'payload json', 'priority smallint', 'run_at timestamp with time zone',
    'attempts smallint', 'max_attempts smallint', 'last_error text', 'created_at timestamp with time zone',
    'updated_at timestamp with time zone', 'key text', 'locked_at timestamp with time zone', 'locked_by text', 'revision integer',
    'flags jsonb', 'is_available boolean',
  ]);
});
