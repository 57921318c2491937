-- functions/kiln.get_usage.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_usage.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_usage(p_account_id uuid, p_workspace_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select usage from kiln_private.usage_rows(p_account_id, p_workspace_id, null);
$function$;
comment on function kiln.get_usage(uuid,uuid) is 'The GET /usage body for an account, and for a workspace-bound key its Team pool (workspace_* null when the plan is not active or the member left). Null when the account does not exist.';
