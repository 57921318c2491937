-- functions/kiln.list_webhook_endpoints.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_webhook_endpoints.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_webhook_endpoints(p_scope_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select coalesce(json_agg(kiln_private.webhook_endpoint_json(e) order by e.created_at, e.id), '[]')
  from kiln_private.webhook_endpoints e where e.scope_id = p_scope_id;
$function$;
comment on function kiln.list_webhook_endpoints(uuid) is 'Every endpoint of a scope, oldest first (no secrets).';
