-- functions/kiln.list_generations_for_keys.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_generations_for_keys.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_generations_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_origin text, p_limits integer[], p_before_ats timestamp with time zone[], p_before_ids uuid[], p_statuses text[], p_types text[], p_model_ids text[], p_sinces timestamp with time zone[], p_end_users text[] DEFAULT NULL::text[], p_metadata jsonb[] DEFAULT NULL::jsonb[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  -- Per request, statuses and types come as comma-separated lists (null = any); an end user and
  -- metadata pairs filter (null = any).
  select r.*, case when r.status = 'ok' then kiln.list_generations(
           r.account_id, r.workspace_id, p_origin, p_limits[r.ord], p_before_ats[r.ord], p_before_ids[r.ord],
           string_to_array(p_statuses[r.ord], ','), string_to_array(p_types[r.ord], ','), p_model_ids[r.ord], p_sinces[r.ord],
           p_end_users[r.ord], p_metadata[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.list_generations_for_keys(bytea[],integer,text,integer[],timestamp with time zone[],uuid[],text[],text[],text[],timestamp with time zone[],text[],jsonb[]) is 'GET /generations for a batch in one transaction: authorizes each key (read scope, the per-key read bucket at p_read_rpm and the key''s own rpm) and, when admitted, returns that page of the key''s account''s generations in the key''s billing scope created through p_origin (kiln.list_generations).';
