-- functions/kiln.list_end_users_for_callers.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_end_users_for_callers.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_end_users_for_callers(p_account_ids uuid[], p_workspace_ids uuid[], p_froms date[], p_tos date[], p_limits integer[], p_after_useds bigint[], p_after_end_users text[])
 RETURNS TABLE(ord integer, body json)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select c.ord::int, kiln.list_end_users(c.account_id, p_workspace_ids[c.ord], p_froms[c.ord], p_tos[c.ord], p_limits[c.ord],
                                         p_after_useds[c.ord], p_after_end_users[c.ord])
  from unnest(p_account_ids) with ordinality c(account_id, ord);
$function$;
comment on function kiln.list_end_users_for_callers(uuid[],uuid[],date[],date[],integer[],bigint[],text[]) is 'GET /end-users for a batch of callers already authorized: each one''s page of end users (kiln.list_end_users), by 1-based ord. Read-only: runs on a streaming replica.';
