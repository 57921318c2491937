-- functions/kiln.read_object_bytes.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.read_object_bytes.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.read_object_bytes(p_path text)
 RETURNS bytea
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select o.data from kiln_private.objects o where o.path = p_path and o.backend = 'postgres';
$function$;
comment on function kiln.read_object_bytes(text) is 'store migrate: the bytes of a postgres-backed object (null when absent or already moved).';
