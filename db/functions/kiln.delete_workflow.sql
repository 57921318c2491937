-- functions/kiln.delete_workflow.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.delete_workflow.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.delete_workflow(p_account_id uuid, p_workspace_id uuid, p_id uuid, p_if_versions bigint[])
 RETURNS kiln_private.workflows
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.workflows;
begin
  perform kiln.lock_workflow(p_account_id, p_workspace_id, p_id, p_if_versions);
  update kiln_private.workflows set deleted_at = now() where id = p_id returning * into v_row;
  return v_row;
end;
$function$;
comment on function kiln.delete_workflow(uuid,uuid,uuid,bigint[]) is 'Deletes a workflow of the caller''s scope (soft: deleted_at): it leaves lists and GET, cannot run or be retried; runs already started finish and stay readable by id. Emits workflow.deleted (trigger). KN001 / KV001 as kiln.lock_workflow.';
