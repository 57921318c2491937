-- functions/kiln.delete_webhook_endpoint.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.delete_webhook_endpoint.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.delete_webhook_endpoint(p_scope_id uuid, p_id uuid)
 RETURNS boolean
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  with d as (delete from kiln_private.webhook_endpoints where id = p_id and scope_id = p_scope_id returning 1)
  select exists (select 1 from d);
$function$;
comment on function kiln.delete_webhook_endpoint(uuid,uuid) is 'Deletes an endpoint of the scope with its delivery log (queued jobs find nothing and end). Whether it existed.';
