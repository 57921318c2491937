-- functions/kiln.record_idempotency_key.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.record_idempotency_key.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.record_idempotency_key(p_account_id uuid, p_operation text, p_key text, p_status integer, p_body jsonb)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  update kiln_private.idempotency_keys set response_status = p_status, response_body = p_body
    where account_id = p_account_id and operation = p_operation and key = p_key and response_body is null;
$function$;
comment on function kiln.record_idempotency_key(uuid,text,text,integer,jsonb) is 'Stores the answer of a request whose Idempotency-Key this transaction claimed (kiln.claim_idempotency_key).';
