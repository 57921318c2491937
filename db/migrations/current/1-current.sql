-- Telemetry (issue 30): the service-wide gauges that every process's /metrics reports, read at most
-- every 5 s per process (src/telemetry/gauges.ts), through graphile-worker's public jobs view and
-- Kiln's own tables.

create index if not exists webhook_deliveries_pending_idx on kiln_private.webhook_deliveries (endpoint_id) where status = 'pending';

create or replace function kiln.sample_telemetry()
  returns json
  language sql
  stable
  security definer
  set search_path to 'pg_catalog', 'pg_temp'
as $$
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
$$;
comment on function kiln.sample_telemetry() is 'The gauges /metrics reports for the whole service: per task, jobs due and not locked and the age of the oldest (graphile_worker.jobs); pending webhook deliveries; workers whose lease is held. Read at most every 5 s per process.';
