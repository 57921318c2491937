-- functions/kiln.admin_revoke_account_keys.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.admin_revoke_account_keys.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.admin_revoke_account_keys(p_admin_id uuid, p_account_id uuid)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_ids uuid[];
begin
  perform kiln_private.require_admin(p_admin_id);
  perform 1 from kiln_private.accounts where id = p_account_id;
  if not found then
    raise exception 'account not found' using errcode = 'KN001';
  end if;
  -- One update: the api_keys trigger writes one key.revoked entry per key.
  with revoked as (
    update kiln_private.api_keys set revoked_at = now()
    where account_id = p_account_id and kind = 'key' and revoked_at is null
    returning id)
  select coalesce(array_agg(id), '{}') into v_ids from revoked;
  delete from kiln_private.api_key_grace where key_id = any (v_ids);
  return json_build_object('revoked', cardinality(v_ids), 'account', kiln.admin_get_account(p_account_id));
end;
$function$;
comment on function kiln.admin_revoke_account_keys(uuid,uuid) is 'POST /admin/accounts/{id}/revoke-keys: revokes every live API key of the account (every secret, rotation grace included; one key.revoked audit entry each). Sessions are not keys and stay. KF001 unless an admin, KN001 unknown account.';
