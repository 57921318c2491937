// kiln_private.webhook_job is the one place a webhook__deliver job's settings are written: a new
// event, a retry and a redelivery queue the same job but for its try. A disabled endpoint's reason
// names the threshold kiln.record_webhook_attempt was given.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createAccount, createTestDb } from './_setup.ts';

async function endpointWithDelivery() {
  const { sql } = await createTestDb();
  const a = await createAccount(sql);
  const [{ e }] = await sql`select kiln.create_webhook_endpoint(${a.id}::uuid, null, 'https://hooks.example.test/', null, null, '\\x00'::bytea) as e`;
  await sql`select kiln.send_webhook_test(${a.id}::uuid, ${e.id}::uuid)`;
  const [d] = await sql`select id from kiln_private.webhook_deliveries where endpoint_id = ${e.id}`;
  return { sql, scope: a.id, endpoint: e.id as string, delivery: d!.id as string };
}

test('an event, a retry and a redelivery queue the same webhook__deliver job, on the endpoint\'s queue', async () => {
  const { sql, scope, endpoint, delivery } = await endpointWithDelivery();
  const [{ r: retry }] = await sql`
    select kiln.record_webhook_attempt(${delivery}::uuid, 0, 0, 500, 'status', 'status: 500', 10, null, '{60}'::int[], 432000) as r`;
  assert.equal(retry.status, 'pending');
  assert.equal((await sql`select kiln.redeliver_webhook(${scope}::uuid, ${endpoint}::uuid, ${delivery}::uuid) as ok`)[0]!.ok, true);

  const jobs = await sql`
    select t.identifier, q.queue_name, j.max_attempts, j.payload, j.run_at > now() + interval '50 seconds' as later
    from graphile_worker._private_jobs j
      join graphile_worker._private_tasks t on t.id = j.task_id
      left join graphile_worker._private_job_queues q on q.id = j.job_queue_id
    where j.payload->>'d' = ${delivery} order by j.id`;
  const job = (r: number, n: number, later: boolean) => ({
    identifier: 'webhook__deliver', queue_name: `kiln-webhook:${endpoint}`, max_attempts: 25, payload: { d: delivery, r, n }, later,
  });
  assert.deepEqual(jobs.map((j) => ({ ...j })), [
    job(0, 0, false), // the event (kiln_private.emit_event)
    job(0, 1, true), // the retry, after the schedule's 60 s (kiln.record_webhook_attempt)
    job(1, 0, false), // the redelivery's new round (kiln_private.queue_delivery)
  ]);
});

test('the disable reason names the threshold it was given', async () => {
  const { sql, endpoint, delivery } = await endpointWithDelivery();
  await sql`update kiln_private.webhook_endpoints set failing_since = now() - interval '2 hours' where id = ${endpoint}`;
  const [{ r }] = await sql`
    select kiln.record_webhook_attempt(${delivery}::uuid, 0, 0, 500, 'status', 'status: 500', 10, null, '{60}'::int[], 3600) as r`;
  assert.deepEqual(r, { status: 'failed', disabled: true });
  const [ep] = await sql`select enabled, disabled_reason from kiln_private.webhook_endpoints where id = ${endpoint}`;
  assert.deepEqual({ ...ep }, { enabled: false, disabled_reason: 'No successful delivery for 1 hour while failing.' });

  const words = await sql`
    select s, kiln_private.duration_text(s) as text from unnest('{432000, 86400, 7200, 5400, 60, 61, 1}'::int[]) with ordinality u(s, i) order by i`;
  assert.deepEqual(words.map((w) => w.text), ['5 days', '1 day', '2 hours', '90 minutes', '1 minute', '61 seconds', '1 second']);
});
