-- functions/kiln.switch_object.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.switch_object.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.switch_object(p_path text, p_from_location text, p_data bytea, p_location text, p_sha256 bytea)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_old kiln_private.objects;
begin
  select * into v_old from kiln_private.objects o where o.path = p_path for update;
  -- Gone (retention) or moved by someone else meanwhile: nothing to switch.
  if not found or v_old.location is distinct from p_from_location or (p_location is null) = (v_old.backend = 'postgres') then
    return false;
  end if;
  if p_data is not null and (length(p_data) <> v_old.byte_size or sha256(p_data) <> p_sha256) then
    raise exception 'copied bytes do not match the object' using errcode = 'KI001';
  end if;
  if v_old.sha256 is not null and v_old.sha256 <> p_sha256 then
    raise exception 'copied bytes do not match the object' using errcode = 'KI001';
  end if;
  update kiln_private.objects o
    set backend = case when p_location is null then 'postgres' else 's3' end,
        data = p_data, location = p_location, sha256 = p_sha256
    where o.path = p_path;
  if p_location is not null then
    perform kiln_private.take_object_intent(p_location);
  end if;
  -- The old key is kept for the grace period (a presigned URL may still point at it), then swept.
  if v_old.location is not null then
    insert into kiln_private.object_intents (location) values (v_old.location) on conflict (location) do update set created_at = now();
  end if;
  return true;
end;
$function$;
comment on function kiln.switch_object(text,text,bytea,text,bytea) is 'store migrate: points one object at its verified copy — bytes in p_data (to postgres) or under p_location (to s3) — if it is still where the copy was made from (p_from_location; null = postgres). The given-up key is noted for the sweep. False when the object is gone or already moved. KI001 when the copy''s size or hash differ.';
