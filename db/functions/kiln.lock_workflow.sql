-- functions/kiln.lock_workflow.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.lock_workflow.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.lock_workflow(p_account_id uuid, p_workspace_id uuid, p_id uuid, p_if_versions bigint[])
 RETURNS kiln_private.workflows
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.workflows;
begin
  select w.* into v_row from kiln_private.workflows w
    where w.id = p_id and w.deleted_at is null
      and (p_account_id is null or w.scope_id = any (kiln_private.workflow_scopes(p_account_id, p_workspace_id)))
    for update;
  if not found then
    raise exception 'workflow not found' using errcode = 'KN001';
  end if;
  perform kiln_private.check_workflow_version(v_row.version, p_if_versions);
  return v_row;
end;
$function$;
comment on function kiln.lock_workflow(uuid,uuid,uuid,bigint[]) is 'Locks a workflow of the caller''s scope for the rest of the transaction (a save reads the stored graph, keeps its written-back results and validates before it writes; a run''s write-back waits). KN001 when absent, deleted or another scope''s; KV001 when If-Match (p_if_versions) names another version. p_account_id null = operator access.';
