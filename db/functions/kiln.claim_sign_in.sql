-- functions/kiln.claim_sign_in.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.claim_sign_in.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.claim_sign_in(p_state_hash bytea, p_expires_at timestamp with time zone)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- Expired claims go first: a transaction past its expiry is refused before it gets here.
  delete from kiln_private.sign_in_states where expires_at < now();
  insert into kiln_private.sign_in_states (state_hash, expires_at) values (p_state_hash, p_expires_at)
    on conflict (state_hash) do nothing;
  return found;
end;
$function$;
comment on function kiln.claim_sign_in(bytea,timestamp with time zone) is 'Marks an SSO sign-in transaction (the hash of its state) as completed, once: false when it already was (a replayed callback).';
