-- functions/kiln.admin_update_account.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.admin_update_account.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.admin_update_account(p_admin_id uuid, p_account_id uuid, p_tier text, p_budget_micros bigint, p_set_budget boolean)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform kiln_private.require_admin(p_admin_id);
  perform kiln.update_account(p_account_id, p_tier, p_budget_micros, p_set_budget);
  return kiln.admin_get_account(p_account_id);
end;
$function$;
comment on function kiln.admin_update_account(uuid,uuid,text,bigint,boolean) is 'PATCH /admin/accounts/{id}: kiln.update_account by an admin (KF001 otherwise), audited as account.updated by the accounts trigger; returns the account page.';
