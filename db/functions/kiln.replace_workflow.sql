-- functions/kiln.replace_workflow.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.replace_workflow.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.replace_workflow(p_account_id uuid, p_workspace_id uuid, p_id uuid, p_name text, p_graph jsonb, p_if_versions bigint[])
 RETURNS kiln_private.workflows
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.workflows;
begin
  perform kiln.lock_workflow(p_account_id, p_workspace_id, p_id, p_if_versions);
  update kiln_private.workflows
    set name = coalesce(p_name, name), graph = p_graph, version = version + 1, updated_at = now()
    where id = p_id
    returning * into v_row;
  return v_row;
exception
  when check_violation or not_null_violation then
    raise exception 'invalid workflow: the name must be 1 to 200 characters and the graph an object' using errcode = 'KI001';
end;
$function$;
comment on function kiln.replace_workflow(uuid,uuid,uuid,text,jsonb,bigint[]) is 'Replaces a workflow''s graph (and name; null keeps it): version + 1, updated_at now; emits workflow.saved (trigger). Runs already started keep their snapshot. KN001 / KV001 as kiln.lock_workflow; the graph is validated by the caller.';
