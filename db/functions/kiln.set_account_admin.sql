-- functions/kiln.set_account_admin.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.set_account_admin.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.set_account_admin(p_account_id uuid, p_admin boolean)
 RETURNS kiln_private.accounts
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.accounts;
begin
  if p_admin is null then
    raise exception 'admin must be true or false' using errcode = 'KI001';
  end if;
  update kiln_private.accounts set is_admin = p_admin where id = p_account_id returning * into v_row;
  if not found then
    raise exception 'account not found' using errcode = 'KN001';
  end if;
  return v_row;
end;
$function$;
comment on function kiln.set_account_admin(uuid,boolean) is 'kiln user set --admin: makes an account an admin (or not); audited as account.updated by the accounts trigger. KN001 for an unknown account.';
