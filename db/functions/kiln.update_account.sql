-- functions/kiln.update_account.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.update_account.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.update_account(p_account_id uuid, p_tier text, p_budget_micros bigint, p_set_budget boolean)
 RETURNS kiln_private.accounts
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.accounts;
begin
  update kiln_private.accounts
    set tier = coalesce(p_tier, tier),
        budget_micros = case when p_set_budget then p_budget_micros else budget_micros end
    where id = p_account_id
    returning * into v_row;
  if not found then
    raise exception 'account not found' using errcode = 'KN001';
  end if;
  return v_row;
exception
  when check_violation or foreign_key_violation then
    raise exception 'invalid tier or budget' using errcode = 'KI001';
end;
$function$;
comment on function kiln.update_account(uuid,text,bigint,boolean) is 'Sets an account''s tier (null = unchanged) and, when p_set_budget, its personal budget per period (null = unlimited). KN001 for an unknown account, KI001 for a bad tier or budget.';
