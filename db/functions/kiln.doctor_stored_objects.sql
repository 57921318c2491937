-- functions/kiln.doctor_stored_objects.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.doctor_stored_objects.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.doctor_stored_objects(p_newest boolean, p_after text, p_limit integer)
 RETURNS TABLE(path text, location text, created_at timestamp with time zone)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select o.path, o.location, o.created_at
  from kiln_private.objects o
  where o.backend = 's3' and (p_newest or o.path > coalesce(p_after, ''))
  order by case when p_newest then o.created_at end desc, o.path
  limit p_limit;
$function$;
comment on function kiln.doctor_stored_objects(boolean,text,integer) is '`kiln doctor`: the objects whose bytes are in the s3 bucket, for the caller to HEAD: the newest p_limit (p_newest), or the next p_limit by path after p_after (--full).';
