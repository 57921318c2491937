-- functions/kiln_private.authorize_keys.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.authorize_keys.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.authorize_keys(p_key_hashes bytea[], p_scope text, p_read_rpm integer)
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer)
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select r.ord, r.status, r.key_id, r.account_id, r.workspace_id, r.tier, r.scopes, r.retry_after
  from kiln.authorize_requests(
         p_key_hashes,
         array_fill(p_scope, array[cardinality(p_key_hashes)]),
         array_fill('read'::text, array[cardinality(p_key_hashes)]),
         array_fill(p_read_rpm, array[cardinality(p_key_hashes)]),
         array_fill(false, array[cardinality(p_key_hashes)])) r;
$function$;
comment on function kiln_private.authorize_keys(bytea[],text,integer) is 'kiln.authorize_requests for a batch of keys that all need p_scope and draw on the per-key read bucket at p_read_rpm (and each key''s own rpm).';
