-- functions/kiln.start_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.start_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.start_generation(p_id uuid, p_worker_id text, p_job_id bigint, p_stale_seconds integer, p_wait_ms integer, p_job_max_attempts integer, p_max_crashes integer DEFAULT 10)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
  v_run kiln_private.workflow_runs;
  v_out kiln_private.workflow_run_outputs;
  v_account kiln_private.accounts;
  v_run_id uuid;
  v_slots int;
  v_n int;
  v_crashed boolean := false;
  v_held boolean;
begin
  select run_id into v_run_id from kiln_private.generations where id = p_id;
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  if v_run_id is not null then
    select * into v_run from kiln_private.workflow_runs where id = v_run_id for update;
  end if;
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if v_gen.status in ('completed', 'failed') then
    return json_build_object('outcome', 'done', 'status', v_gen.status);
  end if;
  if v_run_id is not null then
    select * into v_out from kiln_private.workflow_run_outputs
      where run_id = v_run_id and output_node_id = v_gen.output_node_id for update;
    if v_out.status = 'waiting' then
      return json_build_object('outcome', 'not_ready'); -- a stray job: its upstream will enqueue it
    end if;
  end if;
  -- Another job holds this generation's key: this one was superseded (graphile-worker's add_job
  -- clears the key of a locked job and queues a new one, e.g. a slot nudge that met this job
  -- between its pickup and this call). The newer job runs it; this one ends.
  if exists (select 1 from graphile_worker.jobs j where j.key = p_id::text and j.id <> p_job_id) then
    return json_build_object('outcome', 'superseded');
  end if;

  if v_gen.status = 'processing' then
    if v_gen.worker_id = p_worker_id and v_gen.job_id = p_job_id then
      null; -- the same job again (cannot normally happen): carry on
    elsif kiln_private.lease_held(v_gen.worker_id, v_gen.job_id, p_stale_seconds) then
      -- A live worker is running it, however slowly: never run it twice.
      return json_build_object('outcome', 'busy');
    end if;
    -- Otherwise its worker died during the execution (a crash, a kill, a lost session): take it
    -- over; the slot is already held. The cut-off execution is a crash, not an attempt: it never
    -- counts toward max_attempts, but N of them in a row (p_max_crashes) fail the generation, in
    -- case it is what stops its workers.
    v_crashed := v_gen.worker_id is distinct from p_worker_id or v_gen.job_id is distinct from p_job_id;
    if v_crashed and v_gen.crash_streak + 1 >= p_max_crashes then
      update kiln_private.generations
        set crashes = crashes + 1, crash_streak = crash_streak + 1, attempts = greatest(attempts - 1, 0), updated_at = now()
        where id = p_id;
      perform kiln.fail_generation(p_id, format(
        'the worker running this generation stopped during it %s times in a row (it crashed or was killed), so it was not run again: '
        'the request may be what stops the worker. Nothing was charged.', v_gen.crash_streak + 1));
      return json_build_object('outcome', 'done', 'status', 'failed', 'settled', true, 'type', v_gen.type, 'model_id', v_gen.model_id);
    end if;
  else
    if v_run_id is not null then
      if v_run.status in ('completed', 'failed') then
        v_n := kiln_private.abandon_workflow_outputs(v_run_id, array[v_gen.output_node_id]);
        update kiln_private.workflow_runs set abandoned = abandoned + v_n where id = v_run_id;
        perform kiln_private.note_workflow_progress(v_run_id, 0);
        return json_build_object('outcome', 'done', 'status', 'abandoned');
      end if;
      if v_gen.started_at is null and clock_timestamp() > v_run.deadline then
        perform kiln.expire_workflow_run(v_run_id, p_stale_seconds);
        return json_build_object('outcome', 'done', 'status', 'failed');
      end if;
    end if;
    -- A line of a batch canceled or expired meanwhile never starts (docs/api.md, "Batches").
    if v_gen.batch_id is not null and exists (select 1 from kiln_private.batches b
        where b.id = v_gen.batch_id and (b.status <> 'in_progress' or b.expired)) then
      perform kiln_private.end_generation(p_id, case when exists (select 1 from kiln_private.batches b where b.id = v_gen.batch_id and b.status <> 'in_progress')
        then 'canceled' else 'expired: the batch expired before this line started; nothing was charged' end);
      return json_build_object('outcome', 'done', 'status', 'failed', 'settled', true, 'type', v_gen.type, 'model_id', v_gen.model_id);
    end if;
    -- pending: take one of the account's parallel slots, or wait for one. Serialised per account.
    perform pg_advisory_xact_lock(hashtextextended('kiln.slots:' || v_gen.account_id::text, 0));
    select * into v_account from kiln_private.accounts where id = v_gen.account_id;
    if v_account.tier = 'blocked' then
      perform kiln.fail_generation(p_id, case when v_run_id is null then 'this account cannot run generations'
                                              else 'insufficient_quota: this account cannot run generations' end);
      return json_build_object('outcome', 'done', 'status', 'failed', 'settled', true, 'type', v_gen.type, 'model_id', v_gen.model_id);
    end if;
    select coalesce(v_account.parallel_slots, t.parallel_slots) into v_slots
      from kiln_private.tiers t where t.tier = v_account.tier;
    if kiln_private.busy_slots(v_gen.account_id) >= v_slots then
      -- Never rejected: wait pending and look again later (or sooner, when a slot frees).
      update kiln_private.generations set waiting = true, updated_at = now() where id = p_id;
      perform graphile_worker.add_job('generation__run', json_build_object('id', p_id),
                                      run_at => now() + make_interval(secs => p_wait_ms / 1000.0),
                                      job_key => p_id::text,
                                      -- A batch line waits in its lane (docs/api.md, "Batches").
                                      priority => case when v_gen.batch_id is null then 0 else 10 end,
                                      max_attempts => kiln_private.generation_job_attempts());
      return json_build_object('outcome', 'wait');
    end if;
  end if;

  -- An output held while the object store was down: the execution stores it, never calling the
  -- provider, so it is not an attempt.
  v_held := exists (select 1 from kiln_private.held_outputs h where h.generation_id = p_id);
  update kiln_private.generations
    set status = 'processing',
        waiting = false,
        -- A takeover replaces the cut-off execution: the attempt it was stays uncounted.
        attempts = attempts + case when v_crashed or v_held then 0 else 1 end,
        crashes = crashes + v_crashed::int,
        crash_streak = crash_streak + v_crashed::int,
        worker_id = p_worker_id,
        job_id = p_job_id,
        started_at = coalesce(started_at, now()),
        updated_at = now()
    where id = p_id
    returning * into v_gen;
  if v_run_id is not null then
    update kiln_private.workflow_run_outputs
      set status = 'running', started_at = coalesce(started_at, clock_timestamp()), updated_at = now()
      where run_id = v_run_id and output_node_id = v_gen.output_node_id;
    if v_run.status = 'pending' then
      update kiln_private.workflow_runs set status = 'running', started_at = clock_timestamp(), updated_at = now() where id = v_run_id;
    end if;
  end if;
  return json_build_object(
    'outcome', 'run',
    'attempt', v_gen.attempts,
    'max_attempts', v_gen.max_attempts,
    'crashes', v_gen.crashes,
    'account_id', v_gen.account_id,
    'type', v_gen.type,
    'model_id', v_gen.model_id,
    -- A batch line names its catalog entries by keys of its batch's models (kiln.add_batch_lines).
    'request', case when v_gen.batch_id is null then v_gen.request
                    else kiln_private.batch_line_request(v_gen.request, (select b.models from kiln_private.batches b where b.id = v_gen.batch_id)) end,
    'reserved', v_gen.charge_id is not null,
    'batch_id', v_gen.batch_id,
    'reserved_micros', v_gen.reserved_micros,
    'run_id', v_run_id,
    'output_node_id', v_gen.output_node_id,
    'held', v_held,
    -- A run output reads the results of the outputs it depends on.
    'upstream', case when v_run_id is not null then (
      select coalesce(json_object_agg(u.output_node_id, u.result), '{}'::json)
      from kiln_private.workflow_run_outputs u
      where u.run_id = v_run_id and u.output_node_id = any (v_out.refs) and u.status = 'completed') end);
end;
$function$;
comment on function kiln.start_generation(uuid,text,bigint,integer,integer,integer,integer) is 'Moves a generation (any origin) to processing for a worker''s job, respecting the account''s parallel slots and, for a run output, its run (outcome run, with the request, whether it holds an output the object store has yet to take, and, for a run output, its upstream results), or says why not: wait (slots full; re-queued for later), busy (a live worker runs it), superseded (a newer job holds its key and runs it), done (already settled, abandoned, expired, or failed here after p_max_crashes crashes in a row or for a blocked account: then settled true, with its type and model_id, for the caller to count), not_ready (a run output whose inputs are not settled), missing. Taking over from a dead worker counts a crash, not an attempt; an execution that only stores a held output counts neither; p_job_max_attempts is unused (kept for older callers).';
