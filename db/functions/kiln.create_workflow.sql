-- functions/kiln.create_workflow.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.create_workflow.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.create_workflow(p_account_id uuid, p_workspace_id uuid, p_name text, p_graph jsonb)
 RETURNS kiln_private.workflows
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.workflows;
begin
  if p_workspace_id is not null then
    perform 1 from kiln_private.workspace_members
      where workspace_id = p_workspace_id and account_id = p_account_id and left_at is null;
    if not found then
      raise exception 'the account is not a member of that workspace' using errcode = 'KF001';
    end if;
  end if;
  insert into kiln_private.workflows (account_id, workspace_id, name, graph)
    values (p_account_id, p_workspace_id, p_name, p_graph)
    returning * into v_row;
  return v_row;
exception
  when foreign_key_violation then
    raise exception 'account not found' using errcode = 'KN001';
  when check_violation or not_null_violation then
    raise exception 'invalid workflow: the name must be 1 to 200 characters and the graph an object' using errcode = 'KI001';
end;
$function$;
comment on function kiln.create_workflow(uuid,uuid,text,jsonb) is 'Saves a new workflow, version 1, owned by the workspace when p_workspace_id is given (KF001 unless the account is a member of it), else by the account; the graph is validated by the caller. Emits workflow.saved (trigger).';
