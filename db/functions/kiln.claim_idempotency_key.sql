-- functions/kiln.claim_idempotency_key.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.claim_idempotency_key.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.claim_idempotency_key(p_account_id uuid, p_operation text, p_key text, p_fingerprint bytea, p_ttl_seconds integer)
 RETURNS TABLE(replayed boolean, response_status integer, response_body jsonb)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_c record;
begin
  select * into v_c from kiln_private.claim_idempotency_keys(array[p_account_id], array[p_operation], array[p_key],
    array[p_fingerprint], array[null::int], array[null::jsonb], p_ttl_seconds);
  if v_c.outcome = 'conflict' then
    raise exception 'this idempotency key was already used with a different request; use a new key for a new request' using errcode = 'KD001';
  elsif v_c.outcome = 'pending' then
    raise exception 'a request with this idempotency key is still being processed; retry' using errcode = 'KD002';
  end if;
  return query select v_c.outcome = 'replay', v_c.response_status, v_c.response_body;
end;
$function$;
comment on function kiln.claim_idempotency_key(uuid,text,text,bytea,integer) is 'Claims one Idempotency-Key for the caller''s transaction (kiln_private.claim_idempotency_keys): replayed false = claimed (record the answer with kiln.record_idempotency_key before committing; a rollback frees the key), true = the stored status and body. Raises KD001 (used with another request), KD002 (no stored answer).';
