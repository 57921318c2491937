-- functions/kiln.list_generations_for_callers.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_generations_for_callers.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_generations_for_callers(p_account_ids uuid[], p_workspace_ids uuid[], p_origin text, p_limits integer[], p_before_ats timestamp with time zone[], p_before_ids uuid[], p_statuses text[], p_types text[], p_model_ids text[], p_sinces timestamp with time zone[], p_end_users text[] DEFAULT NULL::text[], p_metadata jsonb[] DEFAULT NULL::jsonb[])
 RETURNS TABLE(ord integer, body json)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- Per request, statuses and types come as comma-separated lists (null = any); an end user and
  -- metadata pairs filter (null = any).
  select c.ord::int, kiln.list_generations(
           c.account_id, p_workspace_ids[c.ord], p_origin, p_limits[c.ord], p_before_ats[c.ord], p_before_ids[c.ord],
           string_to_array(p_statuses[c.ord], ','), string_to_array(p_types[c.ord], ','), p_model_ids[c.ord], p_sinces[c.ord],
           p_end_users[c.ord], p_metadata[c.ord])
  from unnest(p_account_ids) with ordinality c(account_id, ord);
$function$;
comment on function kiln.list_generations_for_callers(uuid[],uuid[],text,integer[],timestamp with time zone[],uuid[],text[],text[],text[],timestamp with time zone[],text[],jsonb[]) is 'GET /generations for a batch of callers already authorized (account, billing scope): the page of each (kiln.list_generations), by 1-based ord. Read-only: runs on a streaming replica.';
