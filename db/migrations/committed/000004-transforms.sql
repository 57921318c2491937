--! Previous: sha1:d745b29dbf5b6cf46b708b72fe54c9837b9cfae5
--! Hash: sha1:a37dcaceb6e5e486dd1ae870a15b0faff3ed137f
--! Message: transforms

--! split: 3-transforms.sql
-- Shared seed images (loaded from db/seed/ at migrate time) and transform bookkeeping.

create or replace function kiln.upsert_seed_object(
  p_path text, p_data bytea, p_content_type text, p_format text, p_width int, p_height int
) returns void
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  insert into kiln_private.objects (path, owner_id, data, content_type, format, width, height, byte_size, visibility)
  values (p_path, null, p_data, p_content_type, p_format, p_width, p_height, length(p_data), 'public')
  on conflict (path) do update set
    data = excluded.data, content_type = excluded.content_type, format = excluded.format,
    width = excluded.width, height = excluded.height, byte_size = excluded.byte_size
  where objects.data is distinct from excluded.data;
$$;
comment on function kiln.upsert_seed_object(text, bytea, text, text, int, int) is
  'Stores or refreshes a shared image under seed/ (ownerless, public). Used by migrations only.';
