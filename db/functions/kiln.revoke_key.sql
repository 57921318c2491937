-- functions/kiln.revoke_key.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.revoke_key.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.revoke_key(p_account_id uuid, p_workspace_id uuid, p_caller_scopes text[], p_key_id uuid)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_key kiln_private.api_keys;
begin
  select * into v_key from kiln_private.visible_key(p_account_id, p_workspace_id, p_key_id);
  if v_key.id is null then
    raise exception 'key not found' using errcode = 'KN001';
  end if;
  perform kiln_private.require_key_rights(p_caller_scopes, v_key.scopes);
  update kiln_private.api_keys set revoked_at = coalesce(revoked_at, now()) where id = v_key.id returning * into v_key;
  delete from kiln_private.api_key_grace where key_id = v_key.id;
  return kiln_private.key_json(v_key, kiln_private.key_used(v_key));
end;
$function$;
comment on function kiln.revoke_key(uuid,uuid,text[],uuid) is 'DELETE /keys/{id}: revokes every secret of the key at once (the next request with any of them gets 401). Idempotent. KN001 not the caller''s scope''s, KF002 a key with a scope the caller (p_caller_scopes) lacks.';
