-- functions/kiln.put_object.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.put_object.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.put_object(p_path text, p_owner_id uuid, p_data bytea, p_content_type text, p_format text, p_width integer, p_height integer, p_visibility text)
 RETURNS kiln.object_meta
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.objects;
begin
  insert into kiln_private.objects (path, owner_id, data, content_type, format, width, height, byte_size, visibility)
    values (p_path, p_owner_id, p_data, p_content_type, p_format, p_width, p_height, length(p_data), p_visibility)
    returning * into v_row;
  return row(v_row.path, v_row.owner_id, v_row.content_type, v_row.format, v_row.width, v_row.height,
             v_row.byte_size, v_row.visibility, v_row.created_at)::kiln.object_meta;
exception
  when unique_violation then
    raise exception 'an object already exists at that path' using errcode = 'KC001';
  when check_violation or not_null_violation or foreign_key_violation then
    raise exception 'invalid object' using errcode = 'KI001';
end;
$function$;
comment on function kiln.put_object(text,uuid,bytea,text,text,integer,integer,text) is 'Stores an image under a new path (never overwrites). Raises KC001 when the path is taken, KI001 for a bad path or metadata.';
