-- functions/kiln_private.audit_json.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.audit_json.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.audit_json(p kiln_private.audit_log)
 RETURNS json
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'id', p.id, 'at', to_char(p.at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'actor', json_build_object('type', p.actor_type, 'id', p.actor_id),
    'action', p.action,
    'target', json_build_object('type', p.target_type, 'id', p.target_id),
    'ip', host(p.ip), 'requestId', p.request_id, 'details', p.details);
$function$;
comment on function kiln_private.audit_json(kiln_private.audit_log) is 'An audit entry as the API renders it.';
