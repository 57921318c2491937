-- functions/kiln.events_horizon.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.events_horizon.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.events_horizon()
 RETURNS text
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select pg_snapshot_xmin(pg_current_snapshot())::text;
$function$;
comment on function kiln.events_horizon() is 'The oldest transaction still open: a GET /events stream opened without Last-Event-ID starts at (horizon, 0), so it sends what commits from now on and nothing earlier.';
