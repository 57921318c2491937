-- functions/kiln.note_object_intent.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.note_object_intent.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.note_object_intent(p_location text)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  insert into kiln_private.object_intents (location) values (p_location)
  on conflict (location) do update set created_at = now(), claimed_at = null;
$function$;
comment on function kiln.note_object_intent(text) is 'Notes a bucket key about to be written, committed before the write: if no object row ever references it, the sweep deletes it after the grace period.';
