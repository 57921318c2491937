-- functions/kiln_private.tg_generations__drop_held.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_generations__drop_held.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_generations__drop_held()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  delete from kiln_private.held_outputs where generation_id = new.id;
  return null;
end;
$function$;
comment on function kiln_private.tg_generations__drop_held() is 'Trigger: a generation that ends (completed, failed, canceled) drops the output it held while the object store was down (kiln_private.held_outputs).';
