-- functions/kiln.record_seed_object.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.record_seed_object.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.record_seed_object(p_path text, p_data bytea, p_location text, p_sha256 bytea, p_byte_size integer, p_content_type text, p_format text, p_width integer, p_height integer)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_old kiln_private.objects;
begin
  select * into v_old from kiln_private.objects where path = p_path for update;
  if found and v_old.byte_size = p_byte_size
     and coalesce(v_old.sha256, sha256(v_old.data)) is not distinct from p_sha256 then
    -- Unchanged: a copy written under p_location stays noted, so the sweep removes it.
    return false;
  end if;
  if found and v_old.location is not null then
    insert into kiln_private.object_intents (location) values (v_old.location) on conflict do nothing;
  end if;
  insert into kiln_private.objects (path, owner_id, data, backend, location, sha256, content_type, format, width, height, byte_size, visibility)
  values (p_path, null, p_data, case when p_location is null then 'postgres' else 's3' end, p_location, p_sha256,
          p_content_type, p_format, p_width, p_height, p_byte_size, 'public')
  on conflict (path) do update set
    data = excluded.data, backend = excluded.backend, location = excluded.location, sha256 = excluded.sha256,
    content_type = excluded.content_type, format = excluded.format,
    width = excluded.width, height = excluded.height, byte_size = excluded.byte_size;
  if p_location is not null then
    perform kiln_private.take_object_intent(p_location);
  end if;
  return true;
end;
$function$;
comment on function kiln.record_seed_object(text,bytea,text,bytea,integer,text,text,integer,integer) is 'Stores or refreshes a shared image under seed/ (ownerless, public) on either backend; false when the stored bytes are already these (compared by size and SHA-256). A replaced bucket key is noted for the sweep.';
