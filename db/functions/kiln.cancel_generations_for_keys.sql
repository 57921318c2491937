-- functions/kiln.cancel_generations_for_keys.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.cancel_generations_for_keys.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.cancel_generations_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_ids uuid[], p_origin text)
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, outcome text, body json, model_id text)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select a.ord, a.status, a.key_id, a.account_id, a.workspace_id, a.tier, a.scopes, a.retry_after, c->>'outcome', c->'body', c->>'model_id'
  from kiln_private.authorize_controls(p_key_hashes, p_read_rpm) a
  left join lateral (
    select kiln.cancel_generation(a.account_id, p_ids[a.ord], array[p_origin]) as c where a.status = 'ok'
  ) x on true
  order by a.ord;
$function$;
comment on function kiln.cancel_generations_for_keys(bytea[],integer,uuid[],text) is 'POST /generations/{id}/cancel for a batch in one transaction: authorizes each key (write scope, the per-key read bucket, the key''s own rpm) and, when admitted, cancels that generation of the key''s account created through p_origin (kiln.cancel_generation; outcome null when not admitted; model_id of a canceled one).';
