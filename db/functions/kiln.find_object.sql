-- functions/kiln.find_object.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.find_object.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.find_object(p_path text)
 RETURNS TABLE(path text, owner_id uuid, content_type text, format text, width integer, height integer, byte_size integer, visibility text, created_at timestamp with time zone, backend text, location text, sha256 bytea, data bytea, expired_at timestamp with time zone)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select o.path, o.owner_id, o.content_type, o.format, o.width, o.height, o.byte_size, o.visibility, o.created_at,
         o.backend, o.location, o.sha256, o.data, null::timestamptz
  from kiln_private.objects o where o.path = p_path
  union all
  select e.path, e.owner_id, null, null, null, null, null, e.visibility, null, null, null, null, null, e.expired_at
  from kiln_private.expired_objects e
  where e.path = p_path and not exists (select 1 from kiln_private.objects o where o.path = p_path);
$function$;
comment on function kiln.find_object(text) is 'One object with its backend, location and (postgres backend) bytes; or, for a path retention removed, a row with only expired_at set; no row when it never existed. Ownership is the caller''s check.';
