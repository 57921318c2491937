-- functions/kiln.hold_generation_output.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.hold_generation_output.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.hold_generation_output(p_id uuid, p_worker_id text, p_job_id bigint, p_data bytea, p_result jsonb, p_format text, p_cost_micros bigint, p_provider_request_id text, p_model_id text, p_error text, p_grace_seconds integer)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
  v_held kiln_private.held_outputs;
  v_run_id uuid;
  v_again boolean;
  v_left double precision;
  v_delay double precision;
begin
  select run_id into v_run_id from kiln_private.generations where id = p_id;
  if not found then
    return json_build_object('outcome', 'lost');
  end if;
  if v_run_id is not null then
    perform 1 from kiln_private.workflow_runs where id = v_run_id for update;
  end if;
  select * into v_gen from kiln_private.generations where id = p_id for update;
  -- Only the lease holder holds: a generation canceled or taken over meanwhile is not this job's.
  if v_gen.status <> 'processing' or v_gen.worker_id is distinct from p_worker_id or v_gen.job_id is distinct from p_job_id then
    return json_build_object('outcome', 'lost');
  end if;

  select * into v_held from kiln_private.held_outputs where generation_id = p_id for update;
  v_again := found;
  if v_again then
    update kiln_private.held_outputs
      set store_failures = store_failures + 1, last_error = left(p_error, 1000), updated_at = now()
      where generation_id = p_id
      returning * into v_held;
  else
    if p_data is null or p_result is null then
      raise exception 'no output to hold' using errcode = 'KI001';
    end if;
    insert into kiln_private.held_outputs (generation_id, data, result, format, cost_micros, provider_request_id, model_id, last_error)
      values (p_id, p_data, p_result, p_format, p_cost_micros, p_provider_request_id, p_model_id, left(p_error, 1000))
      returning * into v_held;
  end if;

  v_left := p_grace_seconds - extract(epoch from (now() - v_held.store_failing_since));
  if v_left <= 0 then
    -- Past the grace: the caller fails the generation (releasing its reservation).
    return json_build_object('outcome', 'expired', 'since', v_held.store_failing_since, 'failures', v_held.store_failures);
  end if;

  update kiln_private.generations
    set status = 'pending', worker_id = null, job_id = null, last_error = left(p_error, 1000), updated_at = now(),
        -- The execution that called the provider was an attempt; kiln.start_generation counts none
        -- for those that only retry the store.
        crash_streak = 0
    where id = p_id
    returning * into v_gen;
  if v_run_id is not null then
    update kiln_private.workflow_run_outputs set status = 'queued', updated_at = now()
      where run_id = v_run_id and output_node_id = v_gen.output_node_id and status = 'running';
  end if;
  -- Back off 0.5, 1, 2 … 30 s, and try once more just after the grace ends.
  v_delay := least(least(30.0, 0.5 * power(2, least(v_held.store_failures - 1, 10))), v_left + 0.1);
  perform graphile_worker.add_job('generation__run', json_build_object('id', p_id),
    run_at => now() + make_interval(secs => v_delay),
    job_key => p_id::text, max_attempts => kiln_private.generation_job_attempts());
  perform kiln_private.nudge_waiting_generation(v_gen.account_id);
  return json_build_object('outcome', 'held', 'since', v_held.store_failing_since, 'failures', v_held.store_failures, 'retry_seconds', v_delay);
end;
$function$;
comment on function kiln.hold_generation_output(uuid,text,bigint,bytea,jsonb,text,bigint,text,text,text,integer) is 'The object store failed to take a generation''s image (docs/storage.md, "When the store is down"): keeps the provider''s output (p_data, the result and cost to complete with; null when already held) and, within p_grace_seconds of the first failure, puts the generation back to pending with a retry after a backoff that never calls the provider again (outcome held). Past the grace: outcome expired, for the caller to fail it. Only the lease holder may hold (otherwise outcome lost).';
