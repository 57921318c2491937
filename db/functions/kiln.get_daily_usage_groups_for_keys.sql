-- functions/kiln.get_daily_usage_groups_for_keys.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_daily_usage_groups_for_keys.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_daily_usage_groups_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_froms date[], p_tos date[], p_group_bys text[], p_limits integer[], p_after_days date[], p_after_spends bigint[], p_after_groups text[], p_after_nulls boolean[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select r.*,
         case when r.status <> 'ok' then null
              when p_group_bys[r.ord] is null then kiln.get_daily_usage(r.account_id, r.workspace_id, p_froms[r.ord], p_tos[r.ord])
              else kiln.get_daily_usage_groups(r.account_id, r.workspace_id, p_froms[r.ord], p_tos[r.ord], p_group_bys[r.ord],
                                               p_limits[r.ord], p_after_days[r.ord], p_after_spends[r.ord], p_after_groups[r.ord],
                                               p_after_nulls[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.get_daily_usage_groups_for_keys(bytea[],integer,date[],date[],text[],integer[],date[],bigint[],text[],boolean[]) is 'GET /usage/daily (with or without groupBy) for a batch in one transaction: authorizes each key (read scope, the per-key read bucket at p_read_rpm and the key''s own rpm) and, when admitted, returns the daily usage of its billing scope: kiln.get_daily_usage without a groupBy, kiln.get_daily_usage_groups with one (the caller checks the range, groupBy and limit first).';
