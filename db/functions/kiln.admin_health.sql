-- functions/kiln.admin_health.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.admin_health.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.admin_health()
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'providers', coalesce((select json_agg(json_build_object(
                             'modelId', h.model_id, 'provider', h.provider, 'state', h.state,
                             'consecutiveFailures', h.consecutive_failures,
                             'skippedUntil', to_char(h.skipped_until at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                             'lastError', h.last_error,
                             'lastErrorAt', to_char(h.last_error_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                             'lastSuccessAt', to_char(h.last_success_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                             'calls15m', h.calls_15m, 'failures15m', h.failures_15m, 'errorRate15m', h.error_rate_15m)
                           order by h.model_id) from kiln.provider_health h), '[]'),
    'queue', (select json_build_object(
                'jobs', count(*),
                'ready', count(*) filter (where j.locked_at is null and j.run_at <= now() and j.attempts < j.max_attempts),
                'running', count(*) filter (where j.locked_at is not null),
                'scheduled', count(*) filter (where j.locked_at is null and j.run_at > now()),
                'oldestReadyAt', to_char(min(j.run_at) filter (where j.locked_at is null and j.run_at <= now() and j.attempts < j.max_attempts)
                                         at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                'oldestReadySeconds', floor(extract(epoch from now() - min(j.run_at) filter (
                                        where j.locked_at is null and j.run_at <= now() and j.attempts < j.max_attempts)))::bigint)
              from graphile_worker.jobs j),
    'webhooks', (select json_build_object(
                   'pending', count(*),
                   'due', count(*) filter (where d.next_attempt_at <= now()),
                   'oldestDueAt', to_char(min(d.next_attempt_at) filter (where d.next_attempt_at <= now()) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
                 from kiln_private.webhook_deliveries d where d.status = 'pending'));
$function$;
comment on function kiln.admin_health() is 'GET /admin/health: each network catalog entry''s upstream (kiln.provider_health), the job queue (graphile_worker.jobs, the public view: ready, running, scheduled, the oldest ready job) and the webhook backlog (pending deliveries, those due and the oldest due).';
