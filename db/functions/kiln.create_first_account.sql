-- functions/kiln.create_first_account.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.create_first_account.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.create_first_account(p_email text, p_key_hash bytea, p_display_prefix text)
 RETURNS kiln_private.accounts
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;
comment on function kiln.create_first_account(text,bytea,text) is 'On a database without accounts: creates a development account (pro tier) and a read+write key with the given hash, and returns the account; null when any account exists.';
