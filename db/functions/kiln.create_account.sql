-- functions/kiln.create_account.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.create_account.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.create_account(p_email text, p_tier text DEFAULT 'legacy_free'::text, p_budget_micros bigint DEFAULT NULL::bigint, p_use_tier_default boolean DEFAULT true)
 RETURNS kiln_private.accounts
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_account kiln_private.accounts;
  v_budget bigint := p_budget_micros;
begin
  if p_use_tier_default and v_budget is null then
    select default_budget_micros into v_budget from kiln_private.tiers where tier = p_tier;
    if not found then
      raise exception 'unknown tier %', p_tier using errcode = 'KI001';
    end if;
  end if;
  insert into kiln_private.accounts (email, tier, budget_micros)
    values (p_email, p_tier, v_budget)
    returning * into v_account;
  return v_account;
exception
  when unique_violation then
    raise exception 'an account with email % already exists', p_email using errcode = 'KC001';
  when check_violation or foreign_key_violation then
    raise exception 'invalid account (email or tier)' using errcode = 'KI001';
end;
$function$;
comment on function kiln.create_account(text,text,bigint,boolean) is 'Creates an account. The budget defaults to the tier''s default unless given (null with p_use_tier_default = false means unlimited).';
