-- functions/kiln.get_workflow.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_workflow.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_workflow(p_id uuid, p_account_id uuid, p_workspace_id uuid)
 RETURNS SETOF kiln_private.workflows
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select w.* from kiln_private.workflows w
  where w.id = p_id and w.deleted_at is null
    and (p_account_id is null or w.scope_id = any (kiln_private.workflow_scopes(p_account_id, p_workspace_id)));
$function$;
comment on function kiln.get_workflow(uuid,uuid,uuid) is 'One workflow that is not deleted, with its stored graph (outputs written back by runs included), when it belongs to the caller''s scope (kiln_private.workflow_scopes); p_account_id null = operator access.';
