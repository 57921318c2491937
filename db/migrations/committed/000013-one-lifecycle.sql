--! Previous: sha1:bcd4d0c087291160d84ac20888e2a3915dcfcced
--! Hash: sha1:3640b865503446d7f1b1d99ec6a9bf992a17772f
--! Message: one lifecycle

--! split: 1-current.sql
-- One lifecycle: a workflow output *is* a generation (origin workflow, with its run and output
-- node). One task (generation__run) runs every generation and one set of functions moves it
-- through reserve / slot / lease / settle / release, whoever made it. Settling a generation that
-- belongs to a run also records the run output, decrements its dependents and enqueues those
-- ready — in the same transaction.
--
-- kiln_private.workflow_run_outputs keeps what only a run has: the DAG (refs, pending-dependency
-- counts, dependents) and each output's recorded outcome; the execution state (attempts, lease,
-- charge, slot wait) lives on the output's generation. The duplicate functions and the old task
-- (workflow__run_node) are dropped; runs in flight are carried over (their outputs get
-- generations and generation__run jobs) and finish on the new lifecycle.
--
-- Lock order everywhere: run, then generation, then run outputs.
-- graphile_worker is referenced only inside plpgsql bodies and a guarded block (graphile-migrate's
-- shadow database has no such schema).

--------------------------------------------------------------------------------
-- Data: generations gain their run and output node; every run output gets its generation.

alter table kiln_private.generations add column run_id uuid references kiln_private.workflow_runs (id);
alter table kiln_private.generations add column output_node_id text;
-- A run output's reservation is priced when it starts (its inputs are upstream results).
alter table kiln_private.generations alter column charge_id drop not null;
alter table kiln_private.generations add constraint generations_run_check
  check ((run_id is null) = (output_node_id is null) and (run_id is null or origin = 'workflow'));
alter table kiln_private.generations add constraint generations_charge_check
  check (charge_id is not null or run_id is not null);
create unique index generations_run_output_key on kiln_private.generations (run_id, output_node_id) where run_id is not null;
comment on column kiln_private.generations.run_id is 'For origin workflow: the run this generation is an output of.';
comment on column kiln_private.generations.output_node_id is 'For origin workflow: the output node (of the run''s snapshot) it produces.';

alter table kiln_private.workflow_run_outputs add column generation_id uuid unique references kiln_private.generations (id);
comment on column kiln_private.workflow_run_outputs.generation_id is
  'The generation that produces this output (null only for skipped video outputs).';

-- Every non-video output becomes a generation: settled ones as history, open ones to be run.
insert into kiln_private.generations
  (id, account_id, key_id, workspace_id, origin, model_id, type, request, status, result, error, last_error,
   reserved_micros, cost_micros, charge_id, provider_request_id, attempts, max_attempts,
   created_at, started_at, finished_at, updated_at, run_id, output_node_id)
select gen_random_uuid(), o.account_id, r.key_id, r.workspace_id, 'workflow', coalesce(o.spec->'model'->>'id', ''),
       case when o.type = 'image' then 'image' else 'code' end, o.spec,
       case o.status when 'completed' then 'completed' when 'failed' then 'failed' when 'abandoned' then 'failed' else 'pending' end,
       case when o.status = 'completed' then o.result end,
       case when o.status = 'failed' then coalesce(o.error, 'output failed')
            when o.status = 'abandoned' then 'abandoned: the run ended before this output started; nothing was charged' end,
       o.last_error, coalesce(o.reserved_micros, 0),
       case when o.status = 'completed' then coalesce(o.cost_micros, 0) end,
       o.charge_id, o.provider_request_id, o.attempts, r.max_attempts,
       r.created_at, o.started_at, case when o.status in ('completed', 'failed', 'abandoned') then coalesce(o.finished_at, now()) end,
       now(), o.run_id, o.output_node_id
from kiln_private.workflow_run_outputs o
join kiln_private.workflow_runs r on r.id = o.run_id
where o.type <> 'video' and o.status <> 'skipped';

update kiln_private.workflow_run_outputs o set generation_id = g.id
  from kiln_private.generations g
  where g.run_id = o.run_id and g.output_node_id = o.output_node_id;
-- Outputs that were running are taken up again by generation__run (their charge carries over).
update kiln_private.workflow_run_outputs set status = 'queued' where status = 'running';
update kiln_private.charges c set generation_id = g.id
  from kiln_private.generations g
  where g.charge_id = c.id and g.run_id is not null and c.generation_id is null;

-- The execution state now lives on the generation.
drop index if exists kiln_private.workflow_run_outputs_running_idx;
drop index if exists kiln_private.workflow_run_outputs_waiting_idx;
alter table kiln_private.workflow_run_outputs
  drop column waiting,
  drop column attempts,
  drop column worker_id,
  drop column job_id,
  drop column charge_id,
  drop column reserved_micros,
  drop column last_error,
  drop column provider_request_id;
comment on table kiln_private.workflow_run_outputs is
  'One row per prompt → output edge of a run: its place in the DAG (refs, pending dependencies, dependents), its generation and its recorded outcome.';

--------------------------------------------------------------------------------
-- The duplicate lifecycle goes.

drop function kiln.start_workflow_output(uuid, text, text, bigint, int, int);
drop function kiln.reserve_workflow_output(uuid, text, bigint);
drop function kiln.complete_workflow_output(uuid, text, jsonb, bigint, text);
drop function kiln.fail_workflow_output(uuid, text, text);
drop function kiln.defer_workflow_output(uuid, text, text, bigint, text);
drop function kiln_private.enqueue_workflow_outputs(uuid, text[], int);
drop function kiln_private.wake_workflow_output(uuid);

--------------------------------------------------------------------------------
-- Shared pieces.

create or replace function kiln_private.busy_slots(p_account_id uuid) returns int
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select count(*)::int from kiln_private.generations where account_id = p_account_id and status = 'processing';
$$;
comment on function kiln_private.busy_slots(uuid) is
  'Parallel slots an account uses now: its processing generations (API, MCP and workflow alike).';

create function kiln_private.enqueue_generations(p_ids uuid[], p_max_attempts int) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if coalesce(cardinality(p_ids), 0) = 0 then
    return;
  end if;
  -- One call for the batch; job key = generation id, so a duplicate enqueue collapses into one job.
  perform graphile_worker.add_jobs(array(
    select row('generation__run', json_build_object('id', g), null, null, p_max_attempts::smallint, g::text, null, null)::graphile_worker.job_spec
    from unnest(p_ids) g));
end;
$$;
comment on function kiln_private.enqueue_generations(uuid[], int) is
  'Queues generation__run jobs for existing generations (graphile_worker.add_jobs; job key = generation id).';
alter function kiln_private.enqueue_generations(uuid[], int) set plan_cache_mode = force_generic_plan;

create function kiln_private.schedule_run_deadline(p_run_id uuid, p_at timestamptz) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform graphile_worker.add_job('workflow__check_deadline', json_build_object('run', p_run_id),
                                  run_at => p_at, job_key => kiln_private.workflow_job_key(p_run_id, null), max_attempts => 10);
end;
$$;
comment on function kiln_private.schedule_run_deadline(uuid, timestamptz) is
  'Queues (or moves) the run-window check of a run (task workflow__check_deadline).';

create or replace function kiln_private.abandon_workflow_outputs(p_run_id uuid, p_outputs text[]) returns int
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_out record;
  v_n int := 0;
begin
  -- Not started (or between retries): never run, and nothing is charged. Their generations end
  -- failed (a job that still picks one up finds it done).
  for v_out in
    select o.output_node_id, o.generation_id from kiln_private.workflow_run_outputs o
      where o.run_id = p_run_id and o.status in ('waiting', 'queued')
        and (p_outputs is null or o.output_node_id = any (p_outputs))
      order by o.ordinal
      for update
  loop
    perform kiln_private.end_generation(v_out.generation_id, 'abandoned: the run ended before this output started; nothing was charged');
    update kiln_private.workflow_run_outputs
      set status = 'abandoned', finished_at = clock_timestamp(), updated_at = now()
      where run_id = p_run_id and output_node_id = v_out.output_node_id;
    v_n := v_n + 1;
  end loop;
  return v_n;
end;
$$;
comment on function kiln_private.abandon_workflow_outputs(uuid, text[]) is
  'Marks not-started outputs of a run (all, or the given ones) abandoned, failing their generations and releasing any reservation. Returns how many.';
alter function kiln_private.abandon_workflow_outputs(uuid, text[]) set plan_cache_mode = force_generic_plan;

-- The release half of fail_generation, for a generation whose run has already decided its fate.
create function kiln_private.end_generation(p_id uuid, p_error text) returns boolean
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_gen kiln_private.generations;
begin
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if not found or v_gen.status in ('completed', 'failed') then
    return false;
  end if;
  if v_gen.charge_id is not null then
    perform kiln.release_charge(v_gen.charge_id);
  end if;
  update kiln_private.generations
    set status = 'failed',
        error = left(coalesce(nullif(p_error, ''), 'generation failed'), 1000),
        waiting = false,
        finished_at = now(),
        updated_at = now()
    where id = p_id;
  return true;
end;
$$;
comment on function kiln_private.end_generation(uuid, text) is
  'Fails a generation and releases its reservation, nothing else (callers handle its run and slots). False when already settled.';

--------------------------------------------------------------------------------
-- Starting a run: snapshot, outputs with their dependency counts, one generation per output,
-- jobs for the ready ones and the run-window check — one transaction.

create or replace function kiln.start_workflow_run(
  p_account_id uuid,
  p_key_id uuid,
  p_workspace_id uuid,
  p_origin text,
  p_workflow_id uuid,
  p_snapshot jsonb,
  p_outputs jsonb,
  p_window_seconds int,
  p_max_attempts int
) returns uuid
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_usage json;
  v_id uuid := gen_random_uuid();
  v_deadline timestamptz := now() + make_interval(secs => p_window_seconds);
  v_skipped int;
  v_ready uuid[];
begin
  perform 1 from kiln_private.workflows where id = p_workflow_id and account_id = p_account_id;
  if not found then
    raise exception 'workflow not found' using errcode = 'KN001';
  end if;
  -- Refuse a run that could not charge a single output (every output reserves as it starts).
  v_usage := kiln.get_usage(p_account_id, p_workspace_id);
  if v_usage->>'tier' = 'blocked' then
    raise exception 'this account cannot start generations' using errcode = 'KQ001';
  end if;
  if p_workspace_id is not null then
    if v_usage->>'workspace_used_micros' is null then
      raise exception 'the workspace''s Team plan is not active, or the key''s owner left the workspace' using errcode = 'KP001';
    end if;
    if (v_usage->>'workspace_remaining_micros')::bigint <= 0 then
      raise exception 'the budget for this period is exhausted' using errcode = 'KQ001';
    end if;
  elsif (v_usage->>'remaining_micros')::bigint <= 0 then
    raise exception 'the budget for this period is exhausted' using errcode = 'KQ001';
  end if;

  insert into kiln_private.workflow_runs
    (id, workflow_id, account_id, key_id, workspace_id, origin, snapshot, total, deadline, window_seconds, max_attempts)
  values
    (v_id, p_workflow_id, p_account_id, p_key_id, p_workspace_id, p_origin, p_snapshot,
     jsonb_array_length(p_outputs), v_deadline, p_window_seconds, p_max_attempts);

  with units as (
    select u.*, case when u.type = 'video' then null else gen_random_uuid() end as gen_id
    from jsonb_to_recordset(p_outputs) as u(output text, prompt text, ordinal int, type text, spec jsonb, refs text[], deps int, dependents text[])
  ), gens as (
    insert into kiln_private.generations
      (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, max_attempts, run_id, output_node_id)
    select u.gen_id, p_account_id, p_key_id, p_workspace_id, 'workflow', coalesce(u.spec->'model'->>'id', ''),
           case when u.type = 'image' then 'image' else 'code' end, u.spec, 0, p_max_attempts, v_id, u.output
    from units u where u.gen_id is not null
    returning id
  )
  insert into kiln_private.workflow_run_outputs
    (run_id, output_node_id, prompt_node_id, account_id, ordinal, type, spec, refs, pending_deps, dependents, status, finished_at, generation_id)
  select v_id, u.output, u.prompt, p_account_id, u.ordinal, u.type, u.spec, u.refs, u.deps, u.dependents,
         case when u.type = 'video' then 'skipped' when u.deps = 0 then 'queued' else 'waiting' end,
         case when u.type = 'video' then clock_timestamp() end,
         (select g.id from gens g where g.id = u.gen_id)
  from units u;

  select count(*) filter (where status = 'skipped'), array_agg(generation_id order by ordinal) filter (where status = 'queued')
    into v_skipped, v_ready
    from kiln_private.workflow_run_outputs where run_id = v_id;

  perform kiln_private.enqueue_generations(v_ready, p_max_attempts);
  perform kiln_private.schedule_run_deadline(v_id, v_deadline);
  -- Skipped (video) outputs settle at once; a run with nothing to execute completes here.
  perform kiln_private.note_workflow_progress(v_id, v_skipped);
  return v_id;
exception
  when check_violation or not_null_violation or invalid_text_representation or unique_violation then
    raise exception 'invalid run plan' using errcode = 'KI001';
end;
$$;
comment on function kiln.start_workflow_run(uuid, uuid, uuid, text, uuid, jsonb, jsonb, int, int) is
  'Starts a run in one transaction: checks ownership and that the caller can be charged (KN001, KQ001, KP001), stores the snapshot, the outputs with their dependency counts and one generation (origin workflow) per output, and queues the ready ones plus the run-window check.';

--------------------------------------------------------------------------------
-- The lifecycle, for every generation.

create or replace function kiln.start_generation(
  p_id uuid,
  p_worker_id text,
  p_job_id bigint,
  p_stale_seconds int,
  p_wait_ms int,
  p_job_max_attempts int
) returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_gen kiln_private.generations;
  v_run kiln_private.workflow_runs;
  v_out kiln_private.workflow_run_outputs;
  v_account kiln_private.accounts;
  v_run_id uuid;
  v_slots int;
  v_n int;
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

  if v_gen.status = 'processing' then
    if v_gen.worker_id = p_worker_id and v_gen.job_id = p_job_id then
      null; -- the same job again (cannot normally happen): carry on
    elsif kiln_private.lease_held(v_gen.worker_id, v_gen.job_id, p_stale_seconds) then
      -- A live worker is running it, however slowly: never run it twice.
      return json_build_object('outcome', 'busy');
    end if;
    -- Otherwise its worker died (or let go of the job): take it over; the slot is already held.
  else
    if v_run_id is not null then
      if v_run.status in ('completed', 'failed') then
        v_n := kiln_private.abandon_workflow_outputs(v_run_id, array[v_gen.output_node_id]);
        update kiln_private.workflow_runs set abandoned = abandoned + v_n where id = v_run_id;
        perform kiln_private.note_workflow_progress(v_run_id, 0);
        return json_build_object('outcome', 'done', 'status', 'abandoned');
      end if;
      if v_gen.attempts = 0 and clock_timestamp() > v_run.deadline then
        perform kiln.expire_workflow_run(v_run_id, p_stale_seconds);
        return json_build_object('outcome', 'done', 'status', 'failed');
      end if;
    end if;
    -- pending: take one of the account's parallel slots, or wait for one. Serialised per account.
    perform pg_advisory_xact_lock(hashtextextended('kiln.slots:' || v_gen.account_id::text, 0));
    select * into v_account from kiln_private.accounts where id = v_gen.account_id;
    if v_account.tier = 'blocked' then
      perform kiln.fail_generation(p_id, case when v_run_id is null then 'this account cannot run generations'
                                              else 'insufficient_quota: this account cannot run generations' end);
      return json_build_object('outcome', 'done', 'status', 'failed');
    end if;
    select coalesce(v_account.parallel_slots, t.parallel_slots) into v_slots
      from kiln_private.tiers t where t.tier = v_account.tier;
    if kiln_private.busy_slots(v_gen.account_id) >= v_slots then
      -- Never rejected: wait pending and look again later (or sooner, when a slot frees).
      update kiln_private.generations set waiting = true, updated_at = now() where id = p_id;
      perform graphile_worker.add_job('generation__run', json_build_object('id', p_id),
                                      run_at => now() + make_interval(secs => p_wait_ms / 1000.0),
                                      job_key => p_id::text,
                                      max_attempts => coalesce(p_job_max_attempts, v_gen.max_attempts));
      return json_build_object('outcome', 'wait');
    end if;
  end if;

  update kiln_private.generations
    set status = 'processing',
        waiting = false,
        attempts = attempts + 1,
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
    'account_id', v_gen.account_id,
    'type', v_gen.type,
    'model_id', v_gen.model_id,
    'request', v_gen.request,
    'reserved', v_gen.charge_id is not null,
    'reserved_micros', v_gen.reserved_micros,
    'run_id', v_run_id,
    'output_node_id', v_gen.output_node_id,
    -- A run output reads the results of the outputs it depends on.
    'upstream', case when v_run_id is not null then (
      select coalesce(json_object_agg(u.output_node_id, u.result), '{}'::json)
      from kiln_private.workflow_run_outputs u
      where u.run_id = v_run_id and u.output_node_id = any (v_out.refs) and u.status = 'completed') end);
end;
$$;
comment on function kiln.start_generation(uuid, text, bigint, int, int, int) is
  'Moves a generation (any origin) to processing for a worker''s job, respecting the account''s parallel slots and, for a run output, its run (outcome run, with the request and, for a run output, its upstream results), or says why not: wait (slots full; re-queued for later), busy (a live worker runs it), done (already settled, abandoned or expired), not_ready (a run output whose inputs are not settled), missing.';

create function kiln.reserve_generation(p_id uuid, p_amount_micros bigint) returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_gen kiln_private.generations;
  v_charge kiln_private.charges;
begin
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if not found or v_gen.status <> 'processing' then
    return json_build_object('ok', false);
  end if;
  if v_gen.charge_id is not null then
    -- Idempotent: a retry or takeover keeps the first reservation.
    return json_build_object('ok', true, 'reserved_micros', v_gen.reserved_micros);
  end if;
  -- Raises KQ001 / KP001 when the budget cannot cover the worst case.
  v_charge := kiln.reserve_budget(v_gen.account_id, v_gen.workspace_id, v_gen.key_id, v_gen.model_id, v_gen.origin,
                                  p_amount_micros, v_gen.id, v_gen.run_id, v_gen.output_node_id);
  update kiln_private.generations
    set charge_id = v_charge.id, reserved_micros = v_charge.reserved_micros, updated_at = now()
    where id = p_id;
  return json_build_object('ok', true, 'reserved_micros', v_charge.reserved_micros);
end;
$$;
comment on function kiln.reserve_generation(uuid, bigint) is
  'Reserves the worst-case cost of a processing generation created without a reservation (a run output, priced once its inputs are known) on its budget pool, once (idempotent). Raises KQ001 or KP001 when the budget cannot cover it.';

create or replace function kiln.defer_generation(p_id uuid, p_worker_id text, p_job_id bigint, p_error text)
  returns kiln_private.generations
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_gen kiln_private.generations;
begin
  update kiln_private.generations
    set status = 'pending', worker_id = null, job_id = null, last_error = left(p_error, 1000), updated_at = now()
    where id = p_id and status = 'processing' and worker_id = p_worker_id and job_id = p_job_id
    returning * into v_gen;
  if found then
    if v_gen.run_id is not null then
      update kiln_private.workflow_run_outputs set status = 'queued', updated_at = now()
        where run_id = v_gen.run_id and output_node_id = v_gen.output_node_id and status = 'running';
    end if;
    perform kiln_private.nudge_waiting_generation(v_gen.account_id);
  end if;
  return v_gen;
end;
$$;
comment on function kiln.defer_generation(uuid, text, bigint, text) is
  'A transient failure: back to pending (freeing the slot, keeping any reservation) until the job''s retry. Only the lease holder may defer.';

create or replace function kiln.complete_generation(p_id uuid, p_result jsonb, p_cost_micros bigint, p_provider_request_id text)
  returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln.complete_generation(uuid, jsonb, bigint, text) is
  'Stores the result and settles the charge at the actual cost (clamped to the reservation) in one call; for a run output also records it on the run, decrements its dependents and queues those ready. Idempotent: only the first completion of a generation applies.';

create or replace function kiln.fail_generation(p_id uuid, p_error text) returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_gen kiln_private.generations;
  v_out kiln_private.workflow_run_outputs;
  v_run_id uuid;
  v_error text := left(coalesce(nullif(p_error, ''), 'generation failed'), 1000);
begin
  select run_id into v_run_id from kiln_private.generations where id = p_id;
  if not found then
    raise exception 'generation not found' using errcode = 'KN001';
  end if;
  if v_run_id is not null then
    perform 1 from kiln_private.workflow_runs where id = v_run_id for update;
  end if;
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if not kiln_private.end_generation(p_id, v_error) then
    return json_build_object('applied', false, 'status', v_gen.status);
  end if;
  if v_run_id is not null then
    -- The run fails at its first failed output; what has not started is abandoned.
    update kiln_private.workflow_run_outputs
      set status = 'failed', error = v_error, finished_at = clock_timestamp(), updated_at = now()
      where run_id = v_run_id and output_node_id = v_gen.output_node_id
      returning * into v_out;
    perform kiln_private.fail_workflow_run(v_run_id,
      format('output "%s" of prompt "%s" failed: %s', left(v_out.output_node_id, 200), left(v_out.prompt_node_id, 200), v_error));
    perform kiln_private.note_workflow_progress(v_run_id, 1);
  end if;
  perform kiln_private.nudge_waiting_generation(v_gen.account_id);
  return json_build_object('applied', true, 'status', 'failed');
end;
$$;
comment on function kiln.fail_generation(uuid, text) is
  'Fails a generation with a client-safe message and releases its reservation in one call; a run output also fails its run (not-started outputs are abandoned). Idempotent.';

--------------------------------------------------------------------------------
-- The run window and stuck outputs, on generations.

create or replace function kiln.expire_workflow_run(p_run_id uuid, p_stale_seconds int) returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_run kiln_private.workflow_runs;
  v_late record;
  v_late_n int := 0;
  v_first text;
  v_stuck record;
  v_stuck_n int := 0;
begin
  select * into v_run from kiln_private.workflow_runs where id = p_run_id for update;
  if not found or v_run.settled + v_run.abandoned >= v_run.total then
    return json_build_object('open', false);
  end if;
  if clock_timestamp() < v_run.deadline then
    -- Too early (e.g. a rescheduled check): look again at the deadline.
    perform kiln_private.schedule_run_deadline(p_run_id, v_run.deadline);
    return json_build_object('open', true);
  end if;

  -- Outputs ready to run but never started within the window fail; the run fails with them.
  for v_late in
    select o.output_node_id, o.prompt_node_id, o.generation_id from kiln_private.workflow_run_outputs o
      where o.run_id = p_run_id and o.status = 'queued' and o.started_at is null
      order by o.ordinal
      for update
  loop
    v_first := coalesce(v_first, format('prompt "%s" → output "%s"', left(v_late.prompt_node_id, 200), left(v_late.output_node_id, 200)));
    perform kiln_private.end_generation(v_late.generation_id, format('not started within the run''s %s-second window', v_run.window_seconds));
    update kiln_private.workflow_run_outputs
      set status = 'failed', finished_at = clock_timestamp(), updated_at = now(),
          error = format('not started within the run''s %s-second window', v_run.window_seconds)
      where run_id = p_run_id and output_node_id = v_late.output_node_id;
    v_late_n := v_late_n + 1;
  end loop;
  if v_late_n = 0 then
    select format('prompt "%s" → output "%s"', left(prompt_node_id, 200), left(output_node_id, 200)) into v_first
      from kiln_private.workflow_run_outputs where run_id = p_run_id and status = 'waiting' order by ordinal limit 1;
  end if;
  if v_first is not null then
    perform kiln_private.fail_workflow_run(p_run_id, format(
      'the run did not finish within its %s-second window: %s was not started. Split the workflow, or run its nodes one by one through /generations.',
      v_run.window_seconds, v_first));
    perform kiln_private.note_workflow_progress(p_run_id, v_late_n);
  end if;

  -- Outputs that no job can finish any more (e.g. a worker died during a final attempt): fail them.
  for v_stuck in
    select g.id from kiln_private.workflow_run_outputs o
      join kiln_private.generations g on g.id = o.generation_id
      where o.run_id = p_run_id and o.status in ('queued', 'running')
        and (g.worker_id is null or not kiln_private.worker_alive(g.worker_id, p_stale_seconds))
        and not exists (
          select 1 from graphile_worker._private_jobs j
            where j.key = g.id::text and (j.locked_at is not null or j.attempts < j.max_attempts))
        and not exists (
          select 1 from graphile_worker._private_jobs j where j.id = g.job_id and j.locked_by is not null)
  loop
    perform kiln.fail_generation(v_stuck.id, 'the output could not be completed; nothing was charged');
    v_stuck_n := v_stuck_n + 1;
  end loop;

  select * into v_run from kiln_private.workflow_runs where id = p_run_id;
  if v_run.settled + v_run.abandoned < v_run.total then
    -- Outputs still in flight: check again later (a dead worker's outputs are then taken over or failed).
    perform kiln_private.schedule_run_deadline(p_run_id, now() + make_interval(secs => greatest(p_stale_seconds, 5)));
  end if;
  return json_build_object('open', v_run.settled + v_run.abandoned < v_run.total, 'late', v_late_n, 'stuck', v_stuck_n);
end;
$$;
comment on function kiln.expire_workflow_run(uuid, int) is
  'The run-window check: after the deadline, outputs not started fail the run (with a message saying so), and outputs no job can finish any more are failed; re-checks later while outputs are in flight.';

create or replace function kiln.sweep_workers(p_stale_seconds int) returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_stale interval := make_interval(secs => p_stale_seconds);
  v_dead text[];
  v_gen record;
  v_failed int := 0;
begin
  v_dead := kiln.unlock_dead_workers(p_stale_seconds);
  if v_dead is null then
    return json_build_object('skipped', true);
  end if;

  -- Generations no job will ever finish (e.g. a worker died during the final attempt, or the
  -- job was removed): fail them so no reservation dangles. A run output still waiting for its
  -- inputs has no job yet, by design.
  for v_gen in
    select g.id from kiln_private.generations g
      where g.status in ('pending', 'processing')
        and g.updated_at < now() - v_stale
        and (g.worker_id is null or not kiln_private.worker_alive(g.worker_id, p_stale_seconds))
        and not exists (
          select 1 from graphile_worker._private_jobs j
            where j.key = g.id::text and (j.locked_at is not null or j.attempts < j.max_attempts))
        and not exists (
          select 1 from graphile_worker._private_jobs j
            where j.id = g.job_id and j.locked_by is not null)
        and not exists (
          select 1 from kiln_private.workflow_run_outputs o
            where o.generation_id = g.id and o.status = 'waiting')
      for update of g skip locked
  loop
    perform kiln.fail_generation(v_gen.id, 'generation could not be completed; nothing was charged');
    v_failed := v_failed + 1;
  end loop;

  return json_build_object('unlocked', v_dead, 'failed_generations', v_failed);
end;
$$;
comment on function kiln.sweep_workers(int) is
  'Crash recovery: unlock_dead_workers, then fails generations that no job can finish any more (no reservation dangles).';

create or replace function kiln.get_workflow_run(p_account_id uuid, p_workflow_id uuid, p_run_id uuid) returns json
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select json_build_object(
    'id', r.id,
    'workflowId', r.workflow_id,
    'status', r.status,
    'total', r.total,
    'settled', r.settled,
    'error', r.error,
    'createdAt', to_char(r.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'completedAt', to_char(r.completed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    -- Past its window with outputs never started: the reader runs the window check first.
    'expired', r.status in ('pending', 'running') and now() > r.deadline and exists (
      select 1 from kiln_private.workflow_run_outputs o
      where o.run_id = r.id and (o.status = 'waiting' or (o.status = 'queued' and o.started_at is null))),
    'results', (
      select coalesce(json_agg(json_build_object(
               'promptNodeId', o.prompt_node_id,
               'outputNodeId', o.output_node_id,
               'type', o.type,
               'status', o.status,
               'label', o.spec->>'label',
               'platform', o.spec->>'platform',
               'path', o.result->>'path',
               'mediaType', o.result->>'mediaType',
               'code', o.result->>'code',
               'error', o.error,
               'costMicros', coalesce(o.cost_micros, 0))
             order by o.finished_at, o.ordinal), '[]'::json)
      from kiln_private.workflow_run_outputs o
      where o.run_id = r.id and o.status in ('completed', 'failed', 'skipped')))
  from kiln_private.workflow_runs r
  where r.id = p_run_id and r.account_id = p_account_id and r.workflow_id = p_workflow_id;
$$;
comment on function kiln.get_workflow_run(uuid, uuid, uuid) is
  'A run''s state and its settled results (in settling order) for its owner, when it belongs to that workflow; null otherwise.';

--------------------------------------------------------------------------------
-- Runs in flight across this upgrade: their open outputs run as generations now. The old task's
-- jobs go; ready outputs and run-window checks are queued under the new tasks.

do $$
declare
  v_run record;
begin
  if to_regnamespace('graphile_worker') is null then
    return; -- graphile-migrate's shadow database
  end if;
  for v_run in
    select r.id, r.deadline, r.max_attempts from kiln_private.workflow_runs r where r.status in ('pending', 'running')
  loop
    perform graphile_worker.remove_job(kiln_private.workflow_job_key(v_run.id, o.output_node_id))
      from kiln_private.workflow_run_outputs o where o.run_id = v_run.id;
    perform graphile_worker.remove_job(kiln_private.workflow_job_key(v_run.id, null));
    perform kiln_private.enqueue_generations(array(
      select o.generation_id from kiln_private.workflow_run_outputs o
        where o.run_id = v_run.id and o.status = 'queued' order by o.ordinal), v_run.max_attempts);
    perform kiln_private.schedule_run_deadline(v_run.id, greatest(v_run.deadline, now()));
  end loop;
end;
$$;
