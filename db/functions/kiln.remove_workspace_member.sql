-- functions/kiln.remove_workspace_member.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.remove_workspace_member.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.remove_workspace_member(p_workspace_id uuid, p_account_id uuid)
 RETURNS kiln_private.workspace_members
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_member kiln_private.workspace_members;
begin
  update kiln_private.workspace_members set left_at = coalesce(left_at, now())
    where workspace_id = p_workspace_id and account_id = p_account_id
    returning * into v_member;
  if not found then
    raise exception 'not a member of that workspace' using errcode = 'KN001';
  end if;
  return v_member;
end;
$function$;
comment on function kiln.remove_workspace_member(uuid,uuid) is 'Marks a member as left (the row stays); their workspace-bound keys then get 402 on spending calls.';
