-- functions/kiln_private.drop_generation_stream.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.drop_generation_stream.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.drop_generation_stream(p_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_paths text[];
begin
  delete from kiln_private.generation_streams s where s.generation_id = p_id returning s.preview_paths into v_paths;
  if cardinality(v_paths) > 0 then
    -- Preview objects go with it; bucket bytes are left to the orphan sweep (docs/storage.md).
    with gone as (
      delete from kiln_private.objects o where o.path = any (v_paths) returning o.location
    )
    insert into kiln_private.object_intents (location)
      select g.location from gone g where g.location is not null
      on conflict do nothing;
  end if;
end;
$function$;
comment on function kiln_private.drop_generation_stream(uuid) is 'A generation ended: what it wrote while running (its row in generation_streams and its preview objects) is dropped. Called by kiln_private.tg_generations__notify.';
