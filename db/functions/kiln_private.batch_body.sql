-- functions/kiln_private.batch_body.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.batch_body.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.batch_body(b kiln_private.batches)
 RETURNS json
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'id', b.id,
    'status', b.status,
    'requestCounts', json_build_object('total', b.total, 'completed', b.completed, 'failed', b.failed, 'canceled', b.canceled),
    'createdAt', to_char(b.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'startedAt', to_char(b.started_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'completedAt', to_char(b.completed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'expiresAt', to_char(b.expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'spentMicros', b.spent_micros);
$function$;
comment on function kiln_private.batch_body(kiln_private.batches) is 'A batch as the API shows it: id, status, requestCounts {total, completed, failed, canceled}, createdAt, startedAt, completedAt, expiresAt and spentMicros.';
