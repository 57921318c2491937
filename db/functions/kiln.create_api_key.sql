-- functions/kiln.create_api_key.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.create_api_key.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.create_api_key(p_account_id uuid, p_key_hash bytea, p_display_prefix text, p_scopes text[], p_rpm integer, p_workspace_id uuid, p_name text DEFAULT NULL::text)
 RETURNS kiln_private.api_keys
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_key kiln_private.api_keys;
begin
  perform 1 from kiln_private.accounts where id = p_account_id;
  if not found then
    raise exception 'account not found' using errcode = 'KN001';
  end if;
  if p_workspace_id is not null then
    -- Only a current owner or admin may bind a key to the workspace's pool.
    perform 1 from kiln_private.workspace_members
      where workspace_id = p_workspace_id and account_id = p_account_id
        and left_at is null and role in ('owner', 'admin');
    if not found then
      raise exception 'only a workspace owner or admin may bind a key to it' using errcode = 'KF001';
    end if;
  end if;
  insert into kiln_private.api_keys (account_id, key_hash, display_prefix, scopes, rpm, workspace_id, name)
    values (p_account_id, p_key_hash, p_display_prefix, p_scopes, p_rpm, p_workspace_id, p_name)
    returning * into v_key;
  return v_key;
exception
  when check_violation then
    raise exception 'invalid key settings (scopes must be read and/or write, rpm > 0)' using errcode = 'KI001';
end;
$function$;
comment on function kiln.create_api_key(uuid,bytea,text,text[],integer,uuid,text) is 'Stores a new API key (hash only). Workspace binding requires a current owner or admin of that workspace.';
