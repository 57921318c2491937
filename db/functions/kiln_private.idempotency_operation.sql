-- functions/kiln_private.idempotency_operation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.idempotency_operation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.idempotency_operation(p_origin text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select case when p_origin = 'mcp' then 'mcp generate' else 'POST /generations' end;
$function$;
comment on function kiln_private.idempotency_operation(text) is 'The Idempotency-Key operation of a generation created through p_origin: REST (api, app) and MCP keep separate keys.';
