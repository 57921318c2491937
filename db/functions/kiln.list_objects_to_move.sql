-- functions/kiln.list_objects_to_move.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_objects_to_move.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_objects_to_move(p_to text, p_after text, p_limit integer)
 RETURNS TABLE(path text, backend text, location text, sha256 bytea, byte_size integer, content_type text)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select o.path, o.backend, o.location, o.sha256, o.byte_size, o.content_type
  from kiln_private.objects o
  where o.backend = case p_to when 's3' then 'postgres' else 's3' end and o.path > coalesce(p_after, '')
  order by o.path
  limit p_limit;
$function$;
comment on function kiln.list_objects_to_move(text,text,integer) is 'store migrate: the next objects (by path, after p_after) not yet on backend p_to.';
