-- functions/kiln_private.webhook_job.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.webhook_job.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.webhook_job(p_delivery_id uuid, p_endpoint_id uuid, p_round integer, p_try integer, p_run_at timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS graphile_worker.job_spec
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- A queue per endpoint runs its deliveries one at a time, so a hanging receiver holds one
  -- worker slot. The task reads d, r and n (tasks/webhook__deliver.ts).
  select row('webhook__deliver', json_build_object('d', p_delivery_id, 'r', p_round, 'n', p_try),
             'kiln-webhook:' || p_endpoint_id, p_run_at, 25, null, null, null)::graphile_worker.job_spec;
$function$;
comment on function kiln_private.webhook_job(uuid,uuid,integer,integer,timestamp with time zone) is 'The webhook__deliver job of one try of a delivery (round p_round, try p_try), on its endpoint''s queue, at p_run_at (now when null): the job''s settings in one place, for graphile_worker.add_jobs.';
