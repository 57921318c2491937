-- functions/kiln.get_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_generation(p_account_id uuid, p_id uuid, p_origins text[])
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select body from kiln.get_generations(array[p_account_id], array[p_id], p_origins);
$function$;
comment on function kiln.get_generation(uuid,uuid,text[]) is 'kiln.get_generations for one: a generation''s state for its owner, when created through one of the given origins; null otherwise.';
