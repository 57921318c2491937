-- functions/kiln.stream_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.stream_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.stream_generations(p_ids uuid[], p_worker_id text, p_sessions integer[], p_offsets integer[], p_texts text[], p_progress jsonb[])
 RETURNS integer[]
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_out integer[] := '{}';
begin
  -- One call for every generation a worker is streaming (docs/api.md, "Streaming"): each flush is
  -- kiln.stream_generation's, in order.
  for i in 1 .. coalesce(cardinality(p_ids), 0) loop
    v_out := v_out || kiln.stream_generation(p_ids[i], p_worker_id, p_sessions[i], p_offsets[i], p_texts[i], null, p_progress[i]);
  end loop;
  return v_out;
end;
$function$;
comment on function kiln.stream_generations(uuid[],text,integer[],integer[],text[],jsonb[]) is 'The flushes of every generation a worker streams, in one call: kiln.stream_generation for each (text and progress; previews go one by one), returning each one''s session (0: not this worker''s any more, -1: begin again).';
