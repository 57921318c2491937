-- functions/kiln_private.workflow_scopes.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.workflow_scopes.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.workflow_scopes(p_account_id uuid, p_workspace_id uuid)
 RETURNS uuid[]
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select array_remove(array[kiln_private.workflow_scope(p_account_id, p_workspace_id),
                            case when p_workspace_id is not null then p_account_id end], null);
$function$;
comment on function kiln_private.workflow_scopes(uuid,uuid) is 'The scopes whose workflows a caller reaches: its own (kiln_private.workflow_scope) and, for a workspace-bound key or identity, its account''s personal ones (as before workflows had scopes); empty for nobody.';
