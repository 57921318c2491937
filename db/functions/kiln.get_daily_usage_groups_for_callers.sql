-- functions/kiln.get_daily_usage_groups_for_callers.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_daily_usage_groups_for_callers.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_daily_usage_groups_for_callers(p_account_ids uuid[], p_workspace_ids uuid[], p_froms date[], p_tos date[], p_group_bys text[], p_limits integer[], p_after_days date[], p_after_spends bigint[], p_after_groups text[], p_after_nulls boolean[])
 RETURNS TABLE(ord integer, body json)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select c.ord::int,
         case when p_group_bys[c.ord] is null then kiln.get_daily_usage(c.account_id, p_workspace_ids[c.ord], p_froms[c.ord], p_tos[c.ord])
              else kiln.get_daily_usage_groups(c.account_id, p_workspace_ids[c.ord], p_froms[c.ord], p_tos[c.ord], p_group_bys[c.ord],
                                               p_limits[c.ord], p_after_days[c.ord], p_after_spends[c.ord], p_after_groups[c.ord],
                                               p_after_nulls[c.ord]) end
  from unnest(p_account_ids) with ordinality c(account_id, ord);
$function$;
comment on function kiln.get_daily_usage_groups_for_callers(uuid[],uuid[],date[],date[],text[],integer[],date[],bigint[],text[],boolean[]) is 'GET /usage/daily (with or without groupBy) for a batch of callers already authorized: kiln.get_daily_usage, or kiln.get_daily_usage_groups with a groupBy, of each one''s billing scope, by 1-based ord. Read-only: runs on a streaming replica.';
