-- functions/kiln.record_key_expiries.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.record_key_expiries.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.record_key_expiries()
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_key record;
  v_n int := 0;
begin
  for v_key in
    update kiln_private.api_keys set expiry_recorded = true
    where id in (select id from kiln_private.api_keys
                 where expires_at <= now() and not expiry_recorded and kind = 'key'
                 order by expires_at limit 1000 for update skip locked)
    returning id, account_id, workspace_id, display_prefix, expires_at, revoked_at
  loop
    if v_key.revoked_at is null or v_key.revoked_at > v_key.expires_at then
      perform kiln_private.audit(coalesce(v_key.workspace_id, v_key.account_id), 'key.expired', 'key', v_key.id::text,
        jsonb_build_object('prefix', v_key.display_prefix, 'expiresAt', v_key.expires_at));
      v_n := v_n + 1;
    end if;
  end loop;
  return v_n;
end;
$function$;
comment on function kiln.record_key_expiries() is 'Housekeeping: one key.expired audit entry per key whose expiry has passed (once each; up to 1,000 a call). Expiry itself needs no sweep: an expired key already gets 401.';
