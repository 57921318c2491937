// A cancel or an expiry of a batch meeting a worker's transaction on one of its lines (docs/api.md,
// "Batches"). A worker locks a line (kiln.start_generation, kiln.complete_generation) and then,
// through kiln_private.tg_generations__batch, its batch's row; a cancel or an expiry that took the
// batch's row first and then waited for that line deadlocked with it (Postgres aborted one: the
// cancel answered 503, or the worker's call failed and cost the line an attempt). Now the cancel
// (kiln.cancel_batch) and the expiry (kiln.expire_batches) touch only the batch's row, and
// kiln.end_batch_lines, in a transaction of its own, locks the lines before the batch's row, as a
// worker does. Seen under load in test/batches.fairness.test.ts; here step by step, with the line
// held in a transaction of the test's own standing in for the worker.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { until } from './_generations.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';

let srv: TestServer;

before(async () => {
  // No worker: the lines stay pending, as the test moves them.
  srv = await startServer();
});

async function batchOf(n: number) {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const key = (await createKey(srv.db.sql, a.id)).key;
  const body = Array.from({ length: n }, (_, i) => JSON.stringify({ custom_id: `l${i + 1}`, method: 'POST', url: '/api/v1/generations', body: { type: 'code', prompt: `line ${i + 1}` } })).join('\n');
  const res = await fetch(`${srv.base}/batches`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/jsonl' }, body });
  assert.equal(res.status, 202);
  const batch = (await res.json()) as { id: string };
  const [line] = await srv.db.sql`select id from kiln_private.generations where batch_id = ${batch.id} and batch_line = 1`;
  return { accountId: a.id, key, id: batch.id, line: line!.id as string };
}

/**
 * Holds `line` locked in a transaction (as a worker's start does), runs `call` beside it, waits
 * until `call` waits for a lock, then starts the line (its batch's trigger updates the batch's
 * row) and commits. Returns what `call` answered; throws what either side met (a deadlock).
 */
async function meet<T>(line: string, call: () => Promise<T>, marker: string): Promise<T> {
  const worker = await srv.db.sql.reserve();
  try {
    await worker`begin`;
    await worker`select 1 from kiln_private.generations where id = ${line} for update`;
    const pending = call();
    pending.catch(() => {});
    await until(`${marker} waits for a lock`, async () => {
      const [{ n }] = await srv.db.sql`select count(*)::int as n from pg_stat_activity
        where wait_event_type = 'Lock' and query like ${`%${marker}%`} and pid <> pg_backend_pid()`;
      return n > 0;
    }, 10_000, 10);
    await worker`update kiln_private.generations set status = 'processing', worker_id = 'test', started_at = now(), updated_at = now() where id = ${line}`;
    await worker`commit`;
    return await pending;
  } catch (e) {
    await worker`rollback`.catch(() => {});
    throw e;
  } finally {
    worker.release();
  }
}

test('a cancel meeting a line being started: no deadlock; the started line is canceled as in flight, the rest as not started', async () => {
  const b = await batchOf(5);
  const [{ r }] = await srv.db.app`select kiln.cancel_batch(${b.accountId}::uuid, ${b.id}::uuid) as r`;
  assert.equal(r.outcome, 'canceled');
  await meet(b.line, () => srv.db.app`select kiln.end_batch_lines(${b.id}::uuid)`, 'end_batch_lines');
  const body = (await api(srv.base, b.key, `/batches/${b.id}`)).body;
  assert.equal(body.status, 'canceled', JSON.stringify(body));
  assert.deepEqual(body.requestCounts, { total: 5, completed: 0, failed: 0, canceled: 5 });
  const rows = await srv.db.sql`select status, error, count(*)::int as n from kiln_private.generations where batch_id = ${b.id} group by 1, 2`;
  assert.deepEqual(rows.map((x) => [x.status, x.error, x.n]), [['failed', 'canceled', 5]]);
  // Nothing is promised to the batch's queue any more.
  const [{ in_queue }] = await srv.db.sql`select in_queue from kiln_private.batches where id = ${b.id}`;
  assert.equal(in_queue, 0);
});

test('an expiry meeting a line being started: no deadlock; the started line goes on, the rest expire, uncharged', async () => {
  const b = await batchOf(5);
  await srv.db.sql`update kiln_private.batches set expires_at = now() - interval '1 second' where id = ${b.id}`;
  const due = await srv.db.app`select id from kiln.expire_batches(10) as id`;
  assert.ok(due.some((d) => d.id === b.id));
  await meet(b.line, () => srv.db.app`select kiln.end_batch_lines(${b.id}::uuid)`, 'end_batch_lines');
  const body = (await api(srv.base, b.key, `/batches/${b.id}`)).body;
  assert.equal(body.status, 'in_progress', 'its line in flight has yet to end');
  assert.deepEqual(body.requestCounts, { total: 5, completed: 0, failed: 4, canceled: 0 });
  // The line in flight ends: the batch is expired.
  await srv.db.sql`select kiln.fail_generation(${b.line}::uuid, 'done with it')`;
  await until('expired', async () => (await api(srv.base, b.key, `/batches/${b.id}`)).body.status === 'expired', 5000, 50);
  const [{ charged }] = await srv.db.sql`select count(*)::int as charged from kiln_private.charges c join kiln_private.generations g on g.id = c.generation_id
    where g.batch_id = ${b.id} and c.status = 'settled'`;
  assert.equal(charged, 0);
});
