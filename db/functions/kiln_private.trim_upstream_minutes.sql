-- functions/kiln_private.trim_upstream_minutes.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.trim_upstream_minutes.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.trim_upstream_minutes()
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  delete from kiln_private.upstream_minutes where minute < now() - interval '1 hour';
$function$;
comment on function kiln_private.trim_upstream_minutes() is 'Drops per-minute upstream counts older than an hour (run by the workers'' full sweep).';
