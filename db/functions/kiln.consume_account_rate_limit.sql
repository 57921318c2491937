-- functions/kiln.consume_account_rate_limit.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.consume_account_rate_limit.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.consume_account_rate_limit(p_account_id uuid, p_bucket text, p_rpm integer)
 RETURNS integer
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select kiln.consume_rate_limits(array[p_bucket || ':' || p_account_id::text], array[p_rpm]);
$function$;
comment on function kiln.consume_account_rate_limit(uuid,text,integer) is 'Per-account bucket (e.g. transform) for callers that are not API keys (MCP). Returns retry-after seconds or 0.';
