-- functions/kiln.add_workspace_member.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.add_workspace_member.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.add_workspace_member(p_workspace_id uuid, p_account_id uuid, p_role text DEFAULT 'member'::text)
 RETURNS kiln_private.workspace_members
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_member kiln_private.workspace_members;
begin
  if p_role not in ('admin', 'member') then
    raise exception 'role must be admin or member' using errcode = 'KI001';
  end if;
  insert into kiln_private.workspace_members (workspace_id, account_id, role)
    values (p_workspace_id, p_account_id, p_role)
    on conflict (workspace_id, account_id) do update
      set role = case when workspace_members.role = 'owner' then 'owner' else excluded.role end,
          left_at = null,
          joined_at = case when workspace_members.left_at is null then workspace_members.joined_at else now() end
    returning * into v_member;
  return v_member;
exception
  when foreign_key_violation then
    raise exception 'workspace or account not found' using errcode = 'KN001';
end;
$function$;
comment on function kiln.add_workspace_member(uuid,uuid,text) is 'Adds (or re-adds) a member with a role.';
