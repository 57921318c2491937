-- functions/kiln_private.take_object_intent.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.take_object_intent.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.take_object_intent(p_location text)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- Locks the note against a concurrent sweep: whichever commits first wins.
  delete from kiln_private.object_intents where location = p_location and claimed_at is null;
  if not found then
    raise exception 'the written bytes are no longer there (swept); write them again' using errcode = 'KS002';
  end if;
end;
$function$;
comment on function kiln_private.take_object_intent(text) is 'A row is about to reference bucket key p_location: drops its note, or raises KS002 when there is no unclaimed note (a sweep took the bytes, or they were never noted).';
