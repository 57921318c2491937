--! Previous: sha1:a282e6f49edcbc4e40f177bfd706bff33dce1bd3
--! Hash: sha1:d0e85615bf7261dc2b3bf3f51aa99d768b5d742c
--! Message: Only graphile-worker's public API in Kiln's SQL

--! split: 1-current.sql
-- Kiln reads and changes graphile-worker's queue only through its public surface (the
-- graphile_worker.jobs view, add_jobs, force_unlock_workers, …): its _private_* tables change
-- between versions. The one exception is the measured enqueue bypass (enqueue_new_generations).
-- All functions stay plpgsql: graphile_worker is resolved at call time (the shadow database has no
-- such schema).

create or replace function kiln.beat_worker(p_worker_id text)
  returns boolean
  language plpgsql
  volatile
  security definer
  set search_path to 'pg_catalog', 'pg_temp'
as $$
declare
  v_row kiln_private.worker_heartbeats;
begin
  update kiln_private.worker_heartbeats set last_seen = now() where worker_id = p_worker_id
    returning * into v_row;
  if not found then
    return false;
  end if;
  -- No job lock is refreshed here any more (graphile-worker has no public call for it): a
  -- generation's deadline is capped below graphile-worker's 4-hour lock expiry instead
  -- (KILN_GENERATION_TIMEOUT_MS, src/config.ts), so no job stays locked that long.
  -- Called on the lease connection: false when this session no longer holds the lease (the
  -- connection was replaced), so the worker stops running jobs under it.
  return exists (
    select 1 from pg_locks l
    where l.locktype = 'advisory' and l.granted and l.pid = pg_backend_pid()
      and l.database = (select oid from pg_database where datname = current_database())
      and l.classid = 1263094862::oid and l.objid = v_row.lease_key::oid and l.objsubid = 2);
end;
$$;
comment on function kiln.beat_worker(text) is 'A registered worker''s heartbeat, on its lease connection: records it and returns whether this session still holds the lease.';

create or replace function kiln_private.lease_held(p_worker_id text, p_job_id bigint, p_stale_seconds integer)
  returns boolean
  language plpgsql
  stable
  set search_path to 'pg_catalog', 'pg_temp'
as $$
begin
  -- The one lease rule, for generations and workflow outputs alike: the executing worker is alive
  -- and still holds the job it runs under (a job that failed or was released lets go of it).
  return p_worker_id is not null
     and kiln_private.worker_alive(p_worker_id, p_stale_seconds)
     and exists (select 1 from graphile_worker.jobs j where j.id = p_job_id and j.locked_at is not null);
end;
$$;
comment on function kiln_private.lease_held(text,bigint,integer) is 'Whether the worker that leased a generation or workflow output still runs it (alive, its job still locked; read from the graphile_worker.jobs view): such work is never taken over.';

create or replace function kiln_private.unlock_silent_pools(p_stale_seconds integer)
  returns text[]
  language plpgsql
  volatile
  set search_path to 'pg_catalog', 'pg_temp'
as $$
declare
  v_stale interval := make_interval(secs => p_stale_seconds);
  v_dead text[];
begin
  -- Pools holding job locks older than the stale window whose worker is not alive: one that never
  -- registered, or one from before leases that stopped heartbeating. A pool locks a job queue only
  -- together with a job of that queue and lets go of both together, so its job locks (the
  -- graphile_worker.jobs view) find it; force_unlock_workers frees its queue locks as well.
  select coalesce(array_agg(distinct j.locked_by), array[]::text[]) into v_dead
    from graphile_worker.jobs j
    where j.locked_by is not null and j.locked_at < now() - v_stale
      and not kiln_private.worker_alive(j.locked_by, p_stale_seconds);
  if cardinality(v_dead) > 0 then
    perform graphile_worker.force_unlock_workers(v_dead);
    perform pg_notify('jobs:insert', json_build_object('r', random(), 'count', cardinality(v_dead))::text);
  end if;
  delete from kiln_private.worker_heartbeats h where h.lease_key is null and h.last_seen < now() - v_stale;
  return v_dead;
end;
$$;
comment on function kiln_private.unlock_silent_pools(integer) is 'The full sweep''s part of crash recovery: unlocks (graphile_worker.force_unlock_workers) the jobs of pools that hold locks older than the stale window and are not alive (never registered, or pre-lease workers without a recent heartbeat).';

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
    perform kiln.fail_generation(v_gen.id, 'generation could not be completed; nothing was charged');
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
comment on function kiln.expire_workflow_run(uuid,integer) is 'The run-window check: after the deadline, outputs not started fail the run (with a message saying so), and outputs no job can finish any more (read from the graphile_worker.jobs view) are failed; re-checks later while outputs are in flight.';

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
    select v_task, json_build_object('id', g), p_max_attempts, g::text from unnest(p_ids) g;
  perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":' || cardinality(p_ids)::text || '}');
end;
$$;
comment on function kiln_private.enqueue_new_generations(uuid[],integer) is 'Queues generation__run jobs for generations created in this transaction (their keys cannot exist yet): the rows graphile_worker.add_jobs would write, in one insert — the one function allowed to name graphile-worker''s private tables, while it gains ≥ 10 % on POST /generations (median of three bench runs on 2026-11-24/25: +13.6 %; BENCH.md). Every other enqueue uses kiln_private.enqueue_generations (add_jobs).';
