--! Previous: sha1:15a32104a8e1d9bb78b6d5d8579196b1b6af78cc
--! Hash: sha1:cc5a8fa4088e3f460b124afbfc7f0998739c80e7
--! Message: operator functions

--! split: 1-current.sql
-- Enter migration here

--! split: 9-operator-functions.sql
-- The operator CLI's last direct table access goes through functions like everything else.

create or replace function kiln.update_account(p_account_id uuid, p_tier text, p_budget_micros bigint, p_set_budget boolean)
  returns kiln_private.accounts
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln.update_account(uuid, text, bigint, boolean) is
  'Sets an account''s tier (null = unchanged) and, when p_set_budget, its personal budget per period (null = unlimited). KN001 for an unknown account, KI001 for a bad tier or budget.';

create or replace function kiln.list_identities(p_account_id uuid) returns setof kiln_private.identities
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select * from kiln_private.identities where account_id = p_account_id order by created_at;
$$;
comment on function kiln.list_identities(uuid) is 'The OIDC identities linked to an account, oldest first.';

create or replace function kiln.create_first_account(p_email text, p_key_hash bytea, p_display_prefix text)
  returns kiln_private.accounts
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_account kiln_private.accounts;
begin
  -- One process at a time, and only on an empty database.
  perform pg_advisory_xact_lock(hashtext('kiln:dev-account'));
  perform 1 from kiln_private.accounts limit 1;
  if found then
    return null;
  end if;
  v_account := kiln.create_account(p_email, 'pro', null, true);
  perform kiln.create_api_key(v_account.id, p_key_hash, p_display_prefix, array['read', 'write'], null, null, 'development key');
  return v_account;
end;
$$;
comment on function kiln.create_first_account(text, bytea, text) is
  'On a database without accounts: creates a development account (pro tier) and a read+write key with the given hash, and returns the account; null when any account exists.';
