-- functions/kiln.count_objects_by_backend.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.count_objects_by_backend.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.count_objects_by_backend()
 RETURNS TABLE(backend text, objects bigint, bytes bigint)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select o.backend, count(*), coalesce(sum(o.byte_size), 0)::bigint from kiln_private.objects o group by o.backend;
$function$;
comment on function kiln.count_objects_by_backend() is 'Objects and bytes per backend (store migrate''s progress total).';
