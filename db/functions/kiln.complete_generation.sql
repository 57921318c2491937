-- functions/kiln.complete_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.complete_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.complete_generation(p_id uuid, p_result jsonb, p_cost_micros bigint, p_provider_request_id text, p_model_id text DEFAULT NULL::text)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
  v_run kiln_private.workflow_runs;
  v_out kiln_private.workflow_run_outputs;
  v_charge kiln_private.charges;
  v_run_id uuid;
  v_ready uuid[];
begin
  select run_id into v_run_id from kiln_private.generations where id = p_id;
  if not found then
    raise exception 'generation not found' using errcode = 'KN001';
  end if;
  if v_run_id is not null then
    select * into v_run from kiln_private.workflow_runs where id = v_run_id for update;
  end if;
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if v_gen.status in ('completed', 'failed') or v_gen.charge_id is null then
    -- Idempotent: a duplicated or retried job finds the first result in place.
    return json_build_object('applied', false, 'status', v_gen.status, 'cost_micros', v_gen.cost_micros);
  end if;
  v_charge := kiln.settle_charge(v_gen.charge_id, p_cost_micros);
  if p_model_id is not null and p_model_id is distinct from v_charge.model_id then
    -- A fallback produced the output: the ledger names (and bills) the model that made it.
    update kiln_private.charges set model_id = p_model_id where id = v_charge.id returning * into v_charge;
  end if;
  update kiln_private.generations
    set status = 'completed',
        result = p_result,
        cost_micros = coalesce(v_charge.settled_micros, 0),
        provider_request_id = left(p_provider_request_id, 200),
        waiting = false,
        finished_at = now(),
        updated_at = now()
    where id = p_id;

  if v_run_id is not null then
    -- The run records the output; its dependents lose one pending dependency and those reaching
    -- zero are queued, all in this transaction.
    update kiln_private.workflow_run_outputs
      set status = 'completed', result = p_result || jsonb_build_object('type', type),
          cost_micros = coalesce(v_charge.settled_micros, 0), finished_at = clock_timestamp(), updated_at = now()
      where run_id = v_run_id and output_node_id = v_gen.output_node_id
      returning * into v_out;
    if v_run.status in ('pending', 'running') and cardinality(v_out.dependents) > 0 then
      with dec as (
        update kiln_private.workflow_run_outputs
          set pending_deps = pending_deps - 1,
              status = case when pending_deps = 1 then 'queued' else status end,
              updated_at = now()
          where run_id = v_run_id and output_node_id = any (v_out.dependents) and status = 'waiting'
          returning generation_id, status, ordinal
      )
      select array_agg(generation_id order by ordinal) filter (where status = 'queued') into v_ready from dec;
      perform kiln_private.enqueue_generations(v_ready, v_run.max_attempts);
    end if;
    perform kiln_private.note_workflow_progress(v_run_id, 1);
  end if;
  perform kiln_private.nudge_waiting_generation(v_gen.account_id);
  return json_build_object('applied', true, 'status', 'completed', 'cost_micros', v_charge.settled_micros,
                           'queued', coalesce(cardinality(v_ready), 0));
end;
$function$;
comment on function kiln.complete_generation(uuid,jsonb,bigint,text,text) is 'Stores the result and settles the charge at the actual cost (clamped to the reservation) in one call; the charge names p_model_id, the catalog entry that produced the output (a fallback of the requested one, or itself). For a run output also records it on the run, decrements its dependents and queues those ready. Idempotent: only the first completion of a generation applies.';
