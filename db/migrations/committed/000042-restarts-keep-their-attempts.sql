--! Previous: sha1:b9880f579cedb2ca4a421818e1919f85834757d1
--! Hash: sha1:76613b78a8a533f7fb72ec4b673d4ecdea27bbbb
--! Message: Restarts do not use up attempts: slot nudges never strand a picked-up job, crashes count apart

--! split: 1-current.sql
-- Issue 32: three restarts in a row failed a workflow output that nothing was wrong with.
--
-- What used up the output's job: kiln_private.nudge_waiting_generation (a slot frees, the oldest
-- slot-waiting generation runs now) called graphile_worker.add_job with the generation's key while
-- that generation's job was already locked by a worker that had picked it up and not yet started
-- it. add_job treats a locked job as out of date: it clears its key, sets its attempts to
-- max_attempts and queues a new job. The old job then started the generation anyway (and the new
-- one found it busy and ended), so the generation ran under a job with no attempts left. When the
-- worker was killed, force_unlock_workers freed that job, graphile-worker never picked it again,
-- and 30 s later kiln.sweep_workers failed the output ("generation could not be completed").
-- Two nudges close together (outputs taken over together settle together) made it likely.
--
-- The cure, and the accounting the issue asks for:
-- - nudge locks the waiting generation (skip locked) before touching its job, and start_generation
--   ends a job whose key another job holds (outcome superseded): the newer job runs it;
-- - generations.attempts counts executions that ran to an end (the provider answered, failed or
--   timed out); a takeover from a dead worker counts a crash instead (crashes, crash_streak), and
--   a worker's shutdown or lost lease defers without counting; p_max_crashes crashes in a row
--   (KILN_GENERATION_MAX_CRASHES) fail it with a message that says so;
-- - a retry is a fresh job (defer_generation queues it, with graphile-worker's backoff), so a
--   generation__run job is picked up once per execution plus once per crash, and its max_attempts
--   is a fixed cap above any crash limit (kiln_private.generation_job_attempts) rather than the
--   generation's attempts;
-- - what no worker can finish any more says why, and what to do.

alter table kiln_private.generations add column if not exists crashes integer not null default 0;
alter table kiln_private.generations add column if not exists crash_streak integer not null default 0;
comment on column kiln_private.generations.attempts is
  'Executions that ran to an end (the provider answered, failed or timed out), counted against max_attempts. An execution cut off by a crash or a shutdown does not count.';
comment on column kiln_private.generations.crashes is
  'Executions cut off because the worker running them died (a crash, a kill, a lost database session) and taken over by another.';
comment on column kiln_private.generations.crash_streak is
  'Crashes since the last execution that ran to an end; KILN_GENERATION_MAX_CRASHES in a row fail the generation.';

create or replace function kiln_private.generation_job_attempts() returns smallint
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$ select 25::smallint $$;
comment on function kiln_private.generation_job_attempts() is
  'max_attempts of every generation__run job: a job is picked up once per execution and once per takeover after a crash (a retry or a slot wait is a new job), so the cap only has to stay above KILN_GENERATION_MAX_CRASHES (at most 20); Kiln counts attempts and crashes itself, on the generation.';

create or replace function kiln_private.unfinishable_message(p_id uuid) returns text
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select case when g.run_id is null
    then format('no worker can finish this generation: its job left the queue (removed, or out of retries%s). Nothing was charged; create the generation again.',
                case when g.crashes > 0 then format(' after its worker stopped %s times', g.crashes) else '' end)
    else format('no worker can finish this output: its job left the queue (removed, or out of retries%s). Nothing was charged; retry the run.',
                case when g.crashes > 0 then format(' after its worker stopped %s times', g.crashes) else '' end)
  end
  from kiln_private.generations g where g.id = p_id;
$$;
comment on function kiln_private.unfinishable_message(uuid) is
  'The error of a generation that no job can finish any more (the sweep and the run-window check fail it): what happened and what to do.';

drop function if exists kiln.start_generation(uuid, text, bigint, int, int, int);
drop function if exists kiln.start_generation(uuid, text, bigint, int, int, int, int);

create function kiln.start_generation(
  p_id uuid,
  p_worker_id text,
  p_job_id bigint,
  p_stale_seconds int,
  p_wait_ms int,
  p_job_max_attempts int,
  p_max_crashes int default 10
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
  v_crashed boolean := false;
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
      return json_build_object('outcome', 'done', 'status', 'failed');
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
                                      max_attempts => kiln_private.generation_job_attempts());
      return json_build_object('outcome', 'wait');
    end if;
  end if;

  update kiln_private.generations
    set status = 'processing',
        waiting = false,
        -- A takeover replaces the cut-off execution: the attempt it was stays uncounted.
        attempts = attempts + case when v_crashed then 0 else 1 end,
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
comment on function kiln.start_generation(uuid, text, bigint, int, int, int, int) is
  'Moves a generation (any origin) to processing for a worker''s job, respecting the account''s parallel slots and, for a run output, its run (outcome run, with the request and, for a run output, its upstream results), or says why not: wait (slots full; re-queued for later), busy (a live worker runs it), superseded (a newer job holds its key and runs it), done (already settled, abandoned, expired, or failed after p_max_crashes crashes in a row), not_ready (a run output whose inputs are not settled), missing. Taking over from a dead worker counts a crash, not an attempt; p_job_max_attempts is unused (kept for older callers).';

drop function if exists kiln.defer_generation(uuid, text, bigint, text);
drop function if exists kiln.defer_generation(uuid, text, bigint, text, boolean);
create function kiln.defer_generation(p_id uuid, p_worker_id text, p_job_id bigint, p_error text, p_counted boolean default true)
  returns kiln_private.generations
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_gen kiln_private.generations;
begin
  update kiln_private.generations
    set status = 'pending', worker_id = null, job_id = null, last_error = left(p_error, 1000), updated_at = now(),
        -- An execution cut short by its worker (shutdown, lost lease) is not an attempt.
        attempts = case when p_counted then attempts else greatest(attempts - 1, 0) end,
        crash_streak = case when p_counted then 0 else crash_streak end
    where id = p_id and status = 'processing' and worker_id = p_worker_id and job_id = p_job_id
    returning * into v_gen;
  if found then
    if v_gen.run_id is not null then
      update kiln_private.workflow_run_outputs set status = 'queued', updated_at = now()
        where run_id = v_gen.run_id and output_node_id = v_gen.output_node_id and status = 'running';
    end if;
    -- The retry is a new job (this one, still locked, loses the key and ends): graphile-worker's
    -- backoff after a counted attempt (e^attempts seconds, at most e^10), at once after a shutdown.
    perform graphile_worker.add_job('generation__run', json_build_object('id', p_id),
      run_at => now() + case when p_counted then make_interval(secs => exp(least(v_gen.attempts, 10))) else interval '0' end,
      job_key => p_id::text, max_attempts => kiln_private.generation_job_attempts());
    perform kiln_private.nudge_waiting_generation(v_gen.account_id);
  end if;
  return v_gen;
end;
$$;
comment on function kiln.defer_generation(uuid, text, bigint, text, boolean) is
  'A transient failure: back to pending (freeing the slot, keeping any reservation) and a new job for the retry, after graphile-worker''s backoff when the attempt counts, at once when it does not (p_counted false: the worker shut down or lost its lease during it). Only the lease holder may defer.';

create or replace function kiln_private.nudge_waiting_generation(p_account_id uuid) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_next kiln_private.generations;
begin
  -- Locked, so that it cannot interleave with kiln.start_generation of the same generation (which
  -- locks it too); one being started is skipped for the next.
  select * into v_next from kiln_private.generations
    where account_id = p_account_id and status = 'pending' and waiting
    order by created_at
    limit 1
    for update skip locked;
  if found then
    -- Same job key: moves the waiting job's run_at to now. Should a worker have just picked that
    -- job up, add_job queues a new one instead and start_generation ends the old (superseded).
    perform graphile_worker.add_job('generation__run', json_build_object('id', v_next.id),
                                    job_key => v_next.id::text, max_attempts => kiln_private.generation_job_attempts());
  end if;
end;
$$;
comment on function kiln_private.nudge_waiting_generation(uuid) is
  'Runs the oldest slot-waiting generation of an account now (called when a slot frees); one being started at this moment is skipped.';

create or replace function kiln_private.enqueue_generations(p_ids uuid[], p_max_attempts int) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
as $$
begin
  if coalesce(cardinality(p_ids), 0) = 0 then
    return;
  end if;
  -- One call for the batch; job key = generation id, so a duplicate enqueue collapses into one job.
  -- The job's cap is Kiln's (generation_job_attempts); p_max_attempts stays on the generations.
  perform graphile_worker.add_jobs(array(
    select row('generation__run', json_build_object('id', g), null, null, kiln_private.generation_job_attempts(), g::text, null, null)::graphile_worker.job_spec
    from unnest(p_ids) g));
end;
$$;
comment on function kiln_private.enqueue_generations(uuid[], int) is
  'Queues generation__run jobs for existing generations (graphile_worker.add_jobs; job key = generation id; max_attempts kiln_private.generation_job_attempts(), whatever p_max_attempts).';

create or replace function kiln_private.enqueue_new_generations(p_ids uuid[], p_max_attempts integer)
  returns void
  language plpgsql
  volatile
  set search_path to 'pg_catalog', 'pg_temp'
as $$
declare
  v_task int;
begin
  if coalesce(cardinality(p_ids), 0) = 0 then
    return;
  end if;
  -- The one place Kiln names graphile-worker's private tables, kept only while it measurably pays
  -- (≥ 10 % on POST /generations; test/db.worker_api.test.ts allows no other). These are brand-new
  -- generation ids, so no job can hold their key: the rows are exactly what add_jobs writes for a
  -- new key, without its clearing of locked jobs' keys (test/db.enqueue.test.ts compares the two
  -- and fails when graphile-worker's table layout changes). Measured against plain
  -- graphile_worker.add_jobs by the bench's generations section (paired rounds, queue drained
  -- before each; 2-core VM shared with other work, load average 13–37), three runs on 2026-11-24/25:
  -- POST /generations +13.6 % (1,345 vs 1,022 req/s), +8.7 % (846 vs 759), +33.3 % (777 vs 654);
  -- median +13.6 %, and less Postgres CPU per request in every run (344 vs 532 µs, 311 vs 386,
  -- 292 vs 392). Per call on one connection: 80–150 µs for one id vs 570–1,310 µs with add_jobs.
  -- When a run on a quiet machine shows under 10 % (BENCH.md, Generations), this function goes
  -- back to kiln_private.enqueue_generations.
  select id into v_task from graphile_worker._private_tasks where identifier = 'generation__run';
  if not found then
    perform kiln_private.enqueue_generations(p_ids, p_max_attempts);
    return;
  end if;
  insert into graphile_worker._private_jobs (task_id, payload, max_attempts, key)
    select v_task, json_build_object('id', g), kiln_private.generation_job_attempts(), g::text from unnest(p_ids) g;
  perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":' || cardinality(p_ids)::text || '}');
end;
$$;
comment on function kiln_private.enqueue_new_generations(uuid[],integer) is 'Queues generation__run jobs for generations created in this transaction (their keys cannot exist yet): the rows graphile_worker.add_jobs would write, in one insert — the one function allowed to name graphile-worker''s private tables, while it gains ≥ 10 % on POST /generations (median of three bench runs on 2026-11-24/25: +13.6 %; BENCH.md). Every other enqueue uses kiln_private.enqueue_generations (add_jobs).';

create or replace function kiln.sweep_workers(p_stale_seconds integer)
  returns json
  language plpgsql
  volatile
  security definer
  set search_path to 'pg_catalog', 'pg_temp'
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
  v_dead := v_dead || kiln_private.unlock_silent_pools(p_stale_seconds);

  -- Generations no job will ever finish (e.g. a worker died during the final attempt, or the
  -- job was removed): fail them so no reservation dangles. A run output still waiting for its
  -- inputs has no job yet, by design.
  for v_gen in
    select g.id from kiln_private.generations g
      where g.status in ('pending', 'processing')
        and g.updated_at < now() - v_stale
        and (g.worker_id is null or not kiln_private.worker_alive(g.worker_id, p_stale_seconds))
        and not exists (
          select 1 from graphile_worker.jobs j
            where j.key = g.id::text and (j.locked_at is not null or j.attempts < j.max_attempts))
        and not exists (
          select 1 from graphile_worker.jobs j
            where j.id = g.job_id and j.locked_by is not null)
        and not exists (
          select 1 from kiln_private.workflow_run_outputs o
            where o.generation_id = g.id and o.status = 'waiting')
      for update of g skip locked
  loop
    perform kiln.fail_generation(v_gen.id, kiln_private.unfinishable_message(v_gen.id));
    v_failed := v_failed + 1;
  end loop;

  return json_build_object('unlocked', v_dead, 'failed_generations', v_failed);
end;
$$;
comment on function kiln.sweep_workers(integer) is 'Crash recovery at the heartbeat interval: unlock_dead_workers, unlock_silent_pools, then fails generations that no job can finish any more (read from the graphile_worker.jobs view), so no reservation dangles.';

create or replace function kiln.expire_workflow_run(p_run_id uuid, p_stale_seconds integer)
  returns json
  language plpgsql
  volatile
  security definer
  set search_path to 'pg_catalog', 'pg_temp'
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
          select 1 from graphile_worker.jobs j
            where j.key = g.id::text and (j.locked_at is not null or j.attempts < j.max_attempts))
        and not exists (
          select 1 from graphile_worker.jobs j where j.id = g.job_id and j.locked_by is not null)
  loop
    perform kiln.fail_generation(v_stuck.id, kiln_private.unfinishable_message(v_stuck.id));
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
comment on function kiln.expire_workflow_run(uuid,integer) is 'The run-window check: after the deadline, outputs not started fail the run (with a message saying so), and outputs no job can finish any more (read from the graphile_worker.jobs view) are failed; re-checks later while outputs are in flight.';

create or replace view kiln.generation_timings as
  select
    g.id,
    (g.created_at at time zone 'UTC')::date as day,
    g.account_id,
    g.workspace_id,
    g.key_id,
    g.model_id,
    g.origin,
    g.type,
    g.status,
    g.attempts,
    g.cost_micros,
    g.created_at,
    extract(epoch from g.started_at - g.created_at) * 1000 as queued_ms,
    extract(epoch from g.finished_at - g.started_at) * 1000 as processing_ms,
    g.max_attempts,
    g.crashes,
    g.crash_streak,
    g.last_error,
    g.error
  from kiln_private.generations g;
comment on view kiln.generation_timings is
  'One row per generation with its queued (created → first started) and processing (started → finished) times in milliseconds, for percentiles over any window (null while not yet started or finished), and what its executions went through: attempts (executions that ran to an end, of max_attempts), crashes (executions cut off by a dead worker and taken over; crash_streak in a row), the last transient error and the final error.';
