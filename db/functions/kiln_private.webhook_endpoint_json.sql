-- functions/kiln_private.webhook_endpoint_json.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.webhook_endpoint_json.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.webhook_endpoint_json(e kiln_private.webhook_endpoints)
 RETURNS json
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'id', e.id, 'url', e.url, 'events', e.events, 'description', e.description,
    'enabled', e.enabled, 'disabledReason', e.disabled_reason,
    'createdAt', to_char(e.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
$function$;
comment on function kiln_private.webhook_endpoint_json(kiln_private.webhook_endpoints) is 'An endpoint as the API shows it (never a secret).';
