-- functions/kiln_private.object_generation_id.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.object_generation_id.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.object_generation_id(p_path text)
 RETURNS uuid
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- Output paths end in the generation id: <account>/generations/<id>.<ext>, <account>/workflows/<run>/<id>.<ext>.
  select (regexp_match(p_path, '/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.[a-z]+$'))[1]::uuid;
$function$;
comment on function kiln_private.object_generation_id(text) is 'The generation id an output path ends in (null for other paths).';
