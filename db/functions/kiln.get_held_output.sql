-- functions/kiln.get_held_output.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_held_output.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_held_output(p_id uuid)
 RETURNS TABLE(data bytea, result jsonb, format text, cost_micros bigint, provider_request_id text, model_id text, store_failing_since timestamp with time zone, store_failures integer)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select h.data, h.result, h.format, h.cost_micros, h.provider_request_id, h.model_id, h.store_failing_since, h.store_failures
  from kiln_private.held_outputs h where h.generation_id = p_id;
$function$;
comment on function kiln.get_held_output(uuid) is 'The provider''s output a generation holds while the object store could not take it (no row: none held): its bytes, the result to complete with, its cost and since when the store has failed.';
