-- functions/kiln_private.busy_slots.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.busy_slots.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.busy_slots(p_account_id uuid)
 RETURNS integer
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select count(*)::int from kiln_private.generations where account_id = p_account_id and status = 'processing';
$function$;
comment on function kiln_private.busy_slots(uuid) is 'Parallel slots an account uses now: its processing generations (API, MCP and workflow alike).';
