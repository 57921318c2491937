-- functions/kiln_private.queue_delivery.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.queue_delivery.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.queue_delivery(p_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v record;
begin
  update kiln_private.webhook_deliveries set status = 'pending', tries = 0, round = round + 1,
    next_attempt_at = clock_timestamp(), failed_at = null
    where id = p_id returning id, endpoint_id, round into v;
  perform graphile_worker.add_jobs(array[kiln_private.webhook_job(v.id, v.endpoint_id, v.round, 0)]);
end;
$function$;
comment on function kiln_private.queue_delivery(uuid) is 'Starts a new round for a delivery (same message, same webhook-id): pending, tries 0, a job now.';
