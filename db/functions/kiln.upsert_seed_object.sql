-- functions/kiln.upsert_seed_object.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.upsert_seed_object.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.upsert_seed_object(p_path text, p_data bytea, p_content_type text, p_format text, p_width integer, p_height integer)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  insert into kiln_private.objects (path, owner_id, data, content_type, format, width, height, byte_size, visibility)
  values (p_path, null, p_data, p_content_type, p_format, p_width, p_height, length(p_data), 'public')
  on conflict (path) do update set
    data = excluded.data, content_type = excluded.content_type, format = excluded.format,
    width = excluded.width, height = excluded.height, byte_size = excluded.byte_size
  where objects.data is distinct from excluded.data;
$function$;
comment on function kiln.upsert_seed_object(text,bytea,text,text,integer,integer) is 'Stores or refreshes a shared image under seed/ (ownerless, public). Used by migrations only.';
