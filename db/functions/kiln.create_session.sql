-- functions/kiln.create_session.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.create_session.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.create_session(p_account_id uuid, p_key_hash bytea, p_display_prefix text, p_idle_seconds integer, p_lifetime_seconds integer, p_name text)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid;
begin
  insert into kiln_private.api_keys (account_id, key_hash, display_prefix, scopes, kind, name, idle_seconds, expires_at, last_used_at)
    values (p_account_id, p_key_hash, p_display_prefix, array['read', 'write', 'keys', 'admin'], 'session', left(p_name, 200),
            p_idle_seconds, now() + make_interval(secs => p_lifetime_seconds), now())
    returning id into v_id;
  return v_id;
end;
$function$;
comment on function kiln.create_session(uuid,bytea,text,integer,integer,text) is 'A console session after a sign-in (audited as session.created). Its admin scope counts only while the user is an admin.';
