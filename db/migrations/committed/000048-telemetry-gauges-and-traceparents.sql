--! Previous: sha1:509b3734dde133ca6a846cea423e0c66d0015a9d
--! Hash: sha1:22f98186f49d1766b73881b6b1bdc9f794e2d297
--! Message: Telemetry: the service-wide gauges in one read (kiln.sample_telemetry), an event's traceparent, pending deliveries indexed

--! split: 1-current.sql
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

-- Traces (issue 30): a webhook delivery's span joins the trace of the request that made its
-- subject — the W3C traceparent kept in the generation's stored request (a run's: in its outputs').
create or replace function kiln.event_traceparent(p_event_id bigint)
  returns text
  language sql
  stable
  security definer
  set search_path to 'pg_catalog', 'pg_temp'
as $$
  select coalesce(
    (select g.request->>'traceparent' from kiln_private.generations g where g.id = e.subject_id),
    (select g.request->>'traceparent' from kiln_private.generations g
       where g.run_id = e.subject_id and g.request ? 'traceparent' limit 1))
  from kiln_private.events e where e.id = p_event_id;
$$;
comment on function kiln.event_traceparent(bigint) is 'The W3C traceparent stored with the request behind an event''s subject (a generation, or a run''s outputs), or null: a webhook delivery''s span joins that trace. Only read when tracing is on.';
