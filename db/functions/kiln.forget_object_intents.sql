-- functions/kiln.forget_object_intents.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.forget_object_intents.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.forget_object_intents(p_locations text[])
 RETURNS integer
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  with gone as (
    delete from kiln_private.object_intents i
    where i.location = any (p_locations)
    returning 1)
  select count(*)::int from gone;
$function$;
comment on function kiln.forget_object_intents(text[]) is 'Drops the notes of bucket keys whose bytes were deleted (claimed by the sweep, or given up by retention: no row can reference either).';
