-- functions/kiln.sample_telemetry.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.sample_telemetry.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.sample_telemetry()
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'jobs', (select coalesce(json_agg(j), '[]'::json) from (
      select j.task_identifier as task, count(*)::int as waiting,
             greatest(0, extract(epoch from now() - min(j.run_at)))::float8 as oldest_seconds
        from graphile_worker.jobs j
        where j.locked_at is null and j.run_at <= now() and j.attempts < j.max_attempts
        group by j.task_identifier) j),
    'webhook_backlog', (select count(*)::int from kiln_private.webhook_deliveries d where d.status = 'pending'),
    'workers_alive', (select count(*)::int from kiln_private.worker_heartbeats h
                        where h.lease_key is not null and kiln_private.lease_key_held(h.lease_key)));
$function$;
comment on function kiln.sample_telemetry() is 'The gauges /metrics reports for the whole service: per task, jobs due and not locked and the age of the oldest (graphile_worker.jobs); pending webhook deliveries; workers whose lease is held. Read at most every 5 s per process.';
