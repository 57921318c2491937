-- functions/kiln.revoke_api_key.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.revoke_api_key.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.revoke_api_key(p_key_id uuid)
 RETURNS kiln_private.api_keys
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_key kiln_private.api_keys;
begin
  update kiln_private.api_keys set revoked_at = coalesce(revoked_at, now())
    where id = p_key_id returning * into v_key;
  if not found then
    raise exception 'key not found' using errcode = 'KN001';
  end if;
  return v_key;
end;
$function$;
comment on function kiln.revoke_api_key(uuid) is 'Revokes a key; effective on the very next request. Idempotent.';
