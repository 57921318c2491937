-- functions/kiln.end_session.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.end_session.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.end_session(p_key_hash bytea)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid;
begin
  select k.id into v_id from kiln_private.api_keys k
    where k.key_hash = p_key_hash and k.kind = 'session' and k.revoked_at is null;
  if v_id is null then
    return false;
  end if;
  -- A sign-out acts as the session it ends (the request names only its address and id).
  perform set_config('kiln.actor', (coalesce(nullif(current_setting('kiln.actor', true), '')::jsonb, '{}')
    || jsonb_build_object('type', 'session', 'id', v_id))::text, true);
  update kiln_private.api_keys set revoked_at = now() where id = v_id and revoked_at is null;
  return found;
end;
$function$;
comment on function kiln.end_session(bytea) is 'Sign-out: ends the session with this cookie hash (audited as session.deleted, by that session). False when there was none.';
