-- functions/kiln.rotate_key.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.rotate_key.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.rotate_key(p_account_id uuid, p_workspace_id uuid, p_caller_scopes text[], p_key_id uuid, p_key_hash bytea, p_display_prefix text, p_grace_seconds integer)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_key kiln_private.api_keys;
begin
  if p_grace_seconds is null or p_grace_seconds < 0 or p_grace_seconds > 604800 then
    raise exception 'graceSeconds must be between 0 and 604800 (7 days)' using errcode = 'KI001';
  end if;
  select * into v_key from kiln_private.visible_key(p_account_id, p_workspace_id, p_key_id);
  if v_key.id is null then
    raise exception 'key not found' using errcode = 'KN001';
  end if;
  select * into v_key from kiln_private.api_keys where id = v_key.id for update;
  -- Before any state is told: a weaker caller learns nothing more than that the key exists.
  perform kiln_private.require_key_rights(p_caller_scopes, v_key.scopes);
  if v_key.revoked_at is not null then
    raise exception 'the key is revoked; create a new key' using errcode = 'KT001';
  end if;
  if v_key.expires_at is not null and v_key.expires_at <= now() then
    raise exception 'the key has expired; create a new key' using errcode = 'KT001';
  end if;
  -- One chain: every older secret ends now; only the one this rotation replaces keeps the grace asked.
  delete from kiln_private.api_key_grace where key_id = v_key.id;
  if p_grace_seconds > 0 then
    insert into kiln_private.api_key_grace (key_hash, key_id, display_prefix, expires_at)
      values (v_key.key_hash, v_key.id, v_key.display_prefix, now() + make_interval(secs => p_grace_seconds));
  end if;
  update kiln_private.api_keys set key_hash = p_key_hash, display_prefix = p_display_prefix, rotated_at = now()
    where id = v_key.id returning * into v_key;
  return kiln_private.key_json(v_key, kiln_private.key_used(v_key));
end;
$function$;
comment on function kiln.rotate_key(uuid,uuid,text[],uuid,bytea,text,integer) is 'POST /keys/{id}/rotate: a new secret under the same id; the secret it replaces stays valid for p_grace_seconds (0 to 7 days), every older one ends at once, then they get the same 401 as any unknown key. KN001 not the caller''s scope''s, KF002 a key with a scope the caller (p_caller_scopes) lacks, KT001 revoked or expired.';
