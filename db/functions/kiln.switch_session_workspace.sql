-- functions/kiln.switch_session_workspace.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.switch_session_workspace.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.switch_session_workspace(p_key_hash bytea, p_workspace_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid;
  v_account uuid;
begin
  select c.id, c.account_id into v_id, v_account from kiln_private.credentials(array[p_key_hash]) c
    join kiln_private.api_keys k on k.id = c.id and k.kind = 'session';
  if v_id is null then
    return false;
  end if;
  if p_workspace_id is not null then
    perform 1 from kiln_private.workspace_members where workspace_id = p_workspace_id and account_id = v_account and left_at is null;
    if not found then
      raise exception 'workspace not found' using errcode = 'KN001';
    end if;
  end if;
  update kiln_private.api_keys set workspace_id = p_workspace_id where id = v_id;
  return true;
end;
$function$;
comment on function kiln.switch_session_workspace(bytea,uuid) is 'The console''s switcher: the session acts in one of its user''s workspaces (KN001 when not a current member), or personally (null).';
