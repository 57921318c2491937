-- functions/kiln.take_ended_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.take_ended_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.take_ended_generations()
 RETURNS json
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v text := nullif(current_setting('kiln.ended_generations', true), '');
begin
  if v is null then
    return '[]'::json;
  end if;
  perform set_config('kiln.ended_generations', '', true);
  return ('[' || replace(rtrim(v, E'\n'), E'\n', ',') || ']')::json;
end;
$function$;
comment on function kiln.take_ended_generations() is 'The generations ended (failed or canceled) in this transaction since the last call, each {type, model_id, status failed|canceled}, for the ending process''s kiln_generations_total; forgets them. Called in the same statement as the call that ended them (after it, from a materialized CTE).';
