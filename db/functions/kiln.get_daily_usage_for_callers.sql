-- functions/kiln.get_daily_usage_for_callers.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_daily_usage_for_callers.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_daily_usage_for_callers(p_account_ids uuid[], p_workspace_ids uuid[], p_froms date[], p_tos date[])
 RETURNS TABLE(ord integer, body json)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select c.ord::int, kiln.get_daily_usage(c.account_id, p_workspace_ids[c.ord], p_froms[c.ord], p_tos[c.ord])
  from unnest(p_account_ids) with ordinality c(account_id, ord);
$function$;
comment on function kiln.get_daily_usage_for_callers(uuid[],uuid[],date[],date[]) is 'GET /usage/daily for a batch of callers already authorized: the daily usage of each one''s billing scope (kiln.get_daily_usage; the caller checks the range first), by 1-based ord. Read-only: runs on a streaming replica.';
