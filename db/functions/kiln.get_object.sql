-- functions/kiln.get_object.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_object.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_object(p_path text)
 RETURNS TABLE(path text, owner_id uuid, content_type text, format text, width integer, height integer, byte_size integer, visibility text, created_at timestamp with time zone, data bytea)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select o.path, o.owner_id, o.content_type, o.format, o.width, o.height, o.byte_size, o.visibility, o.created_at, o.data
  from kiln_private.objects o where o.path = p_path;
$function$;
comment on function kiln.get_object(text) is 'One stored object with its bytes (no row when absent). Ownership is the caller''s check.';
