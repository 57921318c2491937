-- functions/kiln_private.generation_body.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.generation_body.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.generation_body(g kiln_private.generations)
 RETURNS json
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- plpgsql, not sql: its columns are resolved when it runs, so an earlier migration may define
  -- it before a later one adds a column it reads (end_user, metadata).
  return json_build_object(
    'id', g.id,
    'status', g.status,
    'type', g.type,
    'result', case when g.status = 'completed' then g.result end,
    'error', case when g.status = 'failed' then g.error end,
    'cost_micros', g.cost_micros,
    'prompt', g.request->>'prompt',
    'batch_id', g.batch_id,
    'custom_id', g.custom_id,
    'end_user', g.end_user,
    'metadata', g.metadata);
end;
$function$;
comment on function kiln_private.generation_body(kiln_private.generations) is 'A generation as the API reads it: id, status, type, result (completed), error (failed), billed cost, the request''s prompt, for a batch line its batch_id and custom_id, and its attribution (end_user, metadata; null when not given).';
