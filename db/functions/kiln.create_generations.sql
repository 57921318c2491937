-- functions/kiln.create_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.create_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.create_generations(p_account_ids uuid[], p_key_ids uuid[], p_workspace_ids uuid[], p_origins text[], p_types text[], p_model_ids text[], p_model_versions bigint[], p_requests jsonb[], p_reserves bigint[], p_max_attempts integer[], p_idem_keys text[] DEFAULT NULL::text[], p_fingerprints bytea[] DEFAULT NULL::bytea[], p_idem_ttl_seconds integer DEFAULT 86400)
 RETURNS TABLE(ord integer, id uuid, error_code text, error_message text, replayed boolean)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
begin
  if cardinality(p_account_ids) > 50 then
    raise exception 'at most 50 generations per call' using errcode = '22023';
  end if;
  -- One attempts limit per call (every caller passes the same); the largest is kept.
  return query select * from kiln_private.insert_generations(p_account_ids, p_key_ids, p_workspace_ids, p_origins, p_types,
    p_model_ids, p_model_versions, p_requests, p_reserves, (select max(a) from unnest(p_max_attempts) a),
    p_idem_keys, p_fingerprints, p_idem_ttl_seconds);
end;
$function$;
comment on function kiln.create_generations(uuid[],uuid[],uuid[],text[],text[],text[],bigint[],jsonb[],bigint[],integer[],text[],bytea[],integer) is 'Starts up to 50 generations of already-authorized callers in one transaction (kiln_private.insert_generations), with their Idempotency-Keys (null: none). Each row reports its id (replayed: stored by an earlier request with that key and body), or the SQLSTATE and message of its own business error; the others still commit.';
