-- functions/kiln.complete_batch_lines.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.complete_batch_lines.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.complete_batch_lines(p_batch_id uuid, p_ids uuid[], p_results jsonb, p_costs bigint[], p_provider_request_ids text[], p_model_ids text[])
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_r json;
  v_applied boolean[] := '{}';
  v_completed int := 0;
  v_spent bigint := 0;
begin
  if jsonb_array_length(p_results) <> cardinality(p_ids) or cardinality(p_costs) <> cardinality(p_ids) then
    raise exception 'one result and cost per line' using errcode = '22023';
  end if;
  -- Counted below at once (kiln_private.count_batch_lines), not line by line by the trigger.
  perform set_config('kiln.batch_bulk', 'on', true);
  for i in 1 .. coalesce(cardinality(p_ids), 0) loop
    if not exists (select 1 from kiln_private.generations g where g.id = p_ids[i] and g.batch_id = p_batch_id) then
      v_applied := v_applied || false;
      continue;
    end if;
    -- Each line as kiln.complete_generation completes one: idempotent, settled once.
    v_r := kiln.complete_generation(p_ids[i], p_results->(i - 1), p_costs[i], p_provider_request_ids[i], p_model_ids[i]);
    v_applied := v_applied || (v_r->>'applied')::boolean;
    if (v_r->>'applied')::boolean then
      v_completed := v_completed + 1;
      v_spent := v_spent + coalesce((v_r->>'cost_micros')::bigint, 0);
    end if;
  end loop;
  perform kiln_private.count_batch_lines(p_batch_id, 0, false, v_completed, 0, 0, v_spent);
  perform set_config('kiln.batch_bulk', 'off', true);
  return json_build_object('applied', to_json(v_applied));
end;
$function$;
comment on function kiln.complete_batch_lines(uuid,uuid[],jsonb,bigint[],text[],text[]) is 'A batch__run job''s completion of the code lines of its group that ran to an end, in one call: each as kiln.complete_generation completes it (result, settled charge; idempotent: applied false for a line already ended), then the batch counted once (kiln_private.count_batch_lines: may end it, queues the next lines). p_results is a JSON array, one result per id. Returns applied, per line.';
