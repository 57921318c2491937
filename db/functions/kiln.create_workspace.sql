-- functions/kiln.create_workspace.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.create_workspace.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.create_workspace(p_name text, p_owner_id uuid)
 RETURNS kiln_private.workspaces
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_ws kiln_private.workspaces;
begin
  insert into kiln_private.workspaces (name, owner_id) values (p_name, p_owner_id) returning * into v_ws;
  insert into kiln_private.workspace_members (workspace_id, account_id, role) values (v_ws.id, p_owner_id, 'owner');
  return v_ws;
exception
  when foreign_key_violation then
    raise exception 'owner account not found' using errcode = 'KN001';
  when check_violation then
    raise exception 'invalid workspace name' using errcode = 'KI001';
end;
$function$;
comment on function kiln.create_workspace(text,uuid) is 'Creates a workspace with its owner as first member.';
