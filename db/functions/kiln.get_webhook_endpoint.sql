-- functions/kiln.get_webhook_endpoint.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_webhook_endpoint.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_webhook_endpoint(p_scope_id uuid, p_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select kiln_private.webhook_endpoint_json(e) from kiln_private.webhook_endpoints e where e.id = p_id and e.scope_id = p_scope_id;
$function$;
comment on function kiln.get_webhook_endpoint(uuid,uuid) is 'One endpoint of the scope (no secret); null when absent or another scope''s.';
