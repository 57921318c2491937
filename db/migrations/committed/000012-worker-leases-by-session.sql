--! Previous: sha1:de210d20f6d0dfaed4a0079b385c1368ecae6c25
--! Hash: sha1:bcd4d0c087291160d84ac20888e2a3915dcfcced
--! Message: worker leases by session

--! split: 1-current.sql
-- Leases by session: a worker process is alive exactly while its Postgres session is.
--
-- Each worker process takes a session-level advisory lock (namespace 1263094862 = 'KILN', key =
-- its lease key) on a dedicated connection before it runs any job, and registers it here. Postgres
-- frees that lock the moment the process or its connection dies, so a dead worker is recognised
-- at once — not after a heartbeat window — and a live one is recognised before its first
-- heartbeat. Generations and workflow outputs record the lease (worker_id) they run under; a job
-- whose lease is held is never taken over, one whose lease is gone is unlocked by the next sweep
-- (any worker, every second) and run again elsewhere.
--
-- Heartbeats stay, for operators (last_seen) and for workers registered before this migration
-- (no lease key: the old heartbeat-window rule applies to them).

alter table kiln_private.worker_heartbeats add column if not exists lease_key int unique check (lease_key > 0);
alter table kiln_private.worker_heartbeats add column if not exists pool_id text unique;
alter table kiln_private.worker_heartbeats add column if not exists backend_pid int;
comment on column kiln_private.worker_heartbeats.lease_key is
  'Key of the session-level advisory lock (pg_advisory_lock(1263094862, lease_key)) the worker process holds while alive; null for workers registered before leases.';
comment on column kiln_private.worker_heartbeats.backend_pid is
  'The Postgres backend (pg_stat_activity.pid) of the worker''s lease session.';
comment on column kiln_private.worker_heartbeats.pool_id is
  'The graphile-worker pool id the process''s jobs are locked_by (set once its pool exists).';

drop function if exists kiln.register_worker(text, int);
drop function if exists kiln.attach_worker_pool(text, text);
drop function if exists kiln.beat_worker(text);
drop function if exists kiln.unlock_dead_workers(int);
drop function if exists kiln_private.lease_key_held(int);
drop function if exists kiln_private.lease_held(text, bigint, int);

create function kiln_private.lease_key_held(p_lease_key int) returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select exists (
    select 1 from pg_locks l
    where l.locktype = 'advisory' and l.granted
      and l.database = (select oid from pg_database where datname = current_database())
      and l.classid = 1263094862::oid and l.objid = p_lease_key::oid and l.objsubid = 2);
$$;
comment on function kiln_private.lease_key_held(int) is
  'Whether some session of this database holds the worker lease lock with this key.';

create or replace function kiln_private.worker_alive(p_worker_id text, p_stale_seconds int) returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select coalesce((
    select case when h.lease_key is not null then kiln_private.lease_key_held(h.lease_key)
                else h.last_seen >= now() - make_interval(secs => p_stale_seconds) end
    from kiln_private.worker_heartbeats h
    where h.worker_id = p_worker_id or h.pool_id = p_worker_id
    limit 1), false);
$$;
comment on function kiln_private.worker_alive(text, int) is
  'Whether a worker (its lease id, or its graphile-worker pool id) is alive: its session still holds its lease lock (workers without a lease: a heartbeat within the stale window). Unknown workers are not alive.';

create function kiln_private.lease_held(p_worker_id text, p_job_id bigint, p_stale_seconds int) returns boolean
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  -- The one lease rule, for generations and workflow outputs alike: the executing worker is alive
  -- and still holds the job it runs under (a job that failed or was released lets go of it).
  -- plpgsql: graphile_worker is resolved at call time (the shadow database has no such schema).
  return p_worker_id is not null
     and kiln_private.worker_alive(p_worker_id, p_stale_seconds)
     and exists (select 1 from graphile_worker._private_jobs j where j.id = p_job_id and j.locked_at is not null);
end;
$$;
comment on function kiln_private.lease_held(text, bigint, int) is
  'Whether the worker that leased a generation or workflow output still runs it (alive, its job still locked): such work is never taken over.';

create function kiln.register_worker(p_hostname text, p_pid int) returns text
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_key int;
  v_id text;
begin
  -- Session-level, deliberately: the lock outlives this call and dies with the session.
  loop
    v_key := 1 + floor(random() * 2147483646)::int;
    exit when pg_try_advisory_lock(1263094862, v_key);
  end loop;
  v_id := 'lease-' || v_key;
  insert into kiln_private.worker_heartbeats (worker_id, hostname, pid, lease_key, backend_pid)
    values (v_id, left(p_hostname, 200), p_pid, v_key, pg_backend_pid())
    on conflict (worker_id) do update
      set hostname = excluded.hostname, pid = excluded.pid, backend_pid = excluded.backend_pid, pool_id = null,
          started_at = now(), last_seen = now();
  return v_id;
end;
$$;
comment on function kiln.register_worker(text, int) is
  'Gives a worker process its lease: takes a session-level advisory lock on the calling connection (which must stay open while the worker runs) and registers it. Returns the worker id that jobs are leased to.';

create function kiln.attach_worker_pool(p_worker_id text, p_pool_id text) returns void
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  update kiln_private.worker_heartbeats set pool_id = p_pool_id, last_seen = now() where worker_id = p_worker_id;
$$;
comment on function kiln.attach_worker_pool(text, text) is
  'Records the graphile-worker pool id (what jobs are locked_by) of a registered worker.';

create function kiln.beat_worker(p_worker_id text) returns boolean
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row kiln_private.worker_heartbeats;
begin
  update kiln_private.worker_heartbeats set last_seen = now() where worker_id = p_worker_id
    returning * into v_row;
  if not found then
    return false;
  end if;
  -- graphile-worker unlocks any job locked for 4 hours, live worker or not: keep a live
  -- worker's locks fresh so a slow provider call is never run twice.
  if v_row.pool_id is not null then
    update graphile_worker._private_jobs set locked_at = now()
      where locked_by = v_row.pool_id and locked_at < now() - interval '1 hour';
  end if;
  -- Called on the lease connection: false when this session no longer holds the lease (the
  -- connection was replaced), so the worker stops running jobs under it.
  return exists (
    select 1 from pg_locks l
    where l.locktype = 'advisory' and l.granted and l.pid = pg_backend_pid()
      and l.database = (select oid from pg_database where datname = current_database())
      and l.classid = 1263094862::oid and l.objid = v_row.lease_key::oid and l.objsubid = 2);
end;
$$;
comment on function kiln.beat_worker(text) is
  'A registered worker''s heartbeat, on its lease connection: records it, refreshes its job locks, and returns whether this session still holds the lease.';

create or replace function kiln.retire_worker(p_worker_id text) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_key int;
begin
  delete from kiln_private.worker_heartbeats where worker_id = p_worker_id returning lease_key into v_key;
  if v_key is not null then
    perform pg_advisory_unlock(1263094862, v_key); -- false (and harmless) on another session
  end if;
end;
$$;
comment on function kiln.retire_worker(text) is 'Forgets a worker that shut down cleanly (and lets go of its lease on this session).';

create function kiln.unlock_dead_workers(p_stale_seconds int) returns text[]
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_stale interval := make_interval(secs => p_stale_seconds);
  v_dead text[];
begin
  -- One sweeper at a time; the others skip this round.
  if not pg_try_advisory_xact_lock(hashtextextended('kiln.sweep_workers', 0)) then
    return null;
  end if;
  -- Pools holding job locks whose worker is gone: a registered worker whose lease lock is free
  -- at once; a pool never registered (its process died before it could) after the stale window.
  select coalesce(array_agg(distinct l.locked_by), array[]::text[]) into v_dead
    from (
      select j.locked_by, j.locked_at from graphile_worker._private_jobs j where j.locked_by is not null
      union all
      select q.locked_by, q.locked_at from graphile_worker._private_job_queues q where q.locked_by is not null
    ) l
    where not kiln_private.worker_alive(l.locked_by, p_stale_seconds)
      and (l.locked_at < now() - v_stale
           or exists (select 1 from kiln_private.worker_heartbeats h where h.pool_id = l.locked_by and h.lease_key is not null));
  if cardinality(v_dead) > 0 then
    perform graphile_worker.force_unlock_workers(v_dead);
    -- Wake idle workers now rather than at their next poll.
    perform pg_notify('jobs:insert', json_build_object('r', random(), 'count', cardinality(v_dead))::text);
  end if;
  -- Dead workers' rows: lease free, or (no lease) silent for the stale window.
  delete from kiln_private.worker_heartbeats h
    where (h.lease_key is not null and not kiln_private.lease_key_held(h.lease_key))
       or (h.lease_key is null and h.last_seen < now() - v_stale);
  return v_dead;
end;
$$;
comment on function kiln.unlock_dead_workers(int) is
  'Crash recovery, run by every worker about once a second: unlocks (force_unlock_workers) the jobs of workers whose lease lock is free — their process or connection died — so they run again elsewhere within seconds. Returns the pools unlocked (null when another sweep was running).';

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
  -- job was removed): fail them so no reservation dangles.
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


-- The lease rule (kiln_private.lease_held) in both starts: a lease counts while its worker's session lives.

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
  v_account kiln_private.accounts;
  v_slots int;
  v_busy int;
begin
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  if v_gen.status in ('completed', 'failed') then
    return json_build_object('outcome', 'done', 'status', v_gen.status);
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
    -- pending: take one of the account's parallel slots, or wait for one. Serialised per account.
    perform pg_advisory_xact_lock(hashtextextended('kiln.slots:' || v_gen.account_id::text, 0));
    select * into v_account from kiln_private.accounts where id = v_gen.account_id;
    if v_account.tier = 'blocked' then
      perform kiln.fail_generation(p_id, 'this account cannot run generations');
      return json_build_object('outcome', 'done', 'status', 'failed');
    end if;
    select coalesce(v_account.parallel_slots, t.parallel_slots) into v_slots
      from kiln_private.tiers t where t.tier = v_account.tier;
    -- Slots are shared with workflow outputs (kiln_private.busy_slots, defined with workflows).
    v_busy := kiln_private.busy_slots(v_gen.account_id);
    if v_busy >= v_slots then
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
  return json_build_object(
    'outcome', 'run',
    'attempt', v_gen.attempts,
    'max_attempts', v_gen.max_attempts,
    'account_id', v_gen.account_id,
    'type', v_gen.type,
    'model_id', v_gen.model_id,
    'request', v_gen.request,
    'reserved_micros', v_gen.reserved_micros);
end;
$$;
comment on function kiln.start_generation(uuid, text, bigint, int, int, int) is
  'Moves a generation to processing for a worker''s job, respecting the account''s parallel slots (outcome run), or says why not: wait (slots full; re-queued for later), busy (a live worker runs it), done (already settled), missing.';

create or replace function kiln.start_workflow_output(
  p_run_id uuid,
  p_output_id text,
  p_worker_id text,
  p_job_id bigint,
  p_stale_seconds int,
  p_wait_ms int
) returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_run kiln_private.workflow_runs;
  v_out kiln_private.workflow_run_outputs;
  v_account kiln_private.accounts;
  v_slots int;
  v_now timestamptz := clock_timestamp();
  v_n int;
begin
  -- Lock order everywhere: run, then its outputs.
  select * into v_run from kiln_private.workflow_runs where id = p_run_id for update;
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  select * into v_out from kiln_private.workflow_run_outputs
    where run_id = p_run_id and output_node_id = p_output_id for update;
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  if v_out.status in ('completed', 'failed', 'skipped', 'abandoned') then
    return json_build_object('outcome', 'done', 'status', v_out.status);
  end if;
  if v_out.status = 'waiting' then
    return json_build_object('outcome', 'not_ready'); -- a stray job: its upstream will enqueue it
  end if;

  if v_out.status = 'running' then
    if v_out.worker_id = p_worker_id and v_out.job_id = p_job_id then
      null; -- the same job again: carry on
    elsif kiln_private.lease_held(v_out.worker_id, v_out.job_id, p_stale_seconds) then
      return json_build_object('outcome', 'busy'); -- a live worker runs it: never run it twice
    end if;
    -- Otherwise its worker died (or let go of the job): take it over; the slot is already held.
  else
    if v_run.status in ('completed', 'failed') then
      v_n := kiln_private.abandon_workflow_outputs(p_run_id, array[p_output_id]);
      update kiln_private.workflow_runs set abandoned = abandoned + v_n where id = p_run_id;
      perform kiln_private.note_workflow_progress(p_run_id, 0);
      return json_build_object('outcome', 'done', 'status', 'abandoned');
    end if;
    if v_out.attempts = 0 and v_now > v_run.deadline then
      perform kiln.expire_workflow_run(p_run_id, p_stale_seconds);
      return json_build_object('outcome', 'done', 'status', 'failed');
    end if;
    -- Take one of the account's parallel slots (shared with generations), or wait for one.
    perform pg_advisory_xact_lock(hashtextextended('kiln.slots:' || v_out.account_id::text, 0));
    select * into v_account from kiln_private.accounts where id = v_out.account_id;
    if v_account.tier = 'blocked' then
      perform kiln.fail_workflow_output(p_run_id, p_output_id, 'insufficient_quota: this account cannot run generations');
      return json_build_object('outcome', 'done', 'status', 'failed');
    end if;
    select coalesce(v_account.parallel_slots, t.parallel_slots) into v_slots
      from kiln_private.tiers t where t.tier = v_account.tier;
    if kiln_private.busy_slots(v_out.account_id) >= v_slots then
      update kiln_private.workflow_run_outputs set waiting = true, updated_at = now()
        where run_id = p_run_id and output_node_id = p_output_id;
      perform graphile_worker.add_job('workflow__run_node', json_build_object('run', p_run_id, 'output', p_output_id),
                                      run_at => now() + make_interval(secs => p_wait_ms / 1000.0),
                                      job_key => kiln_private.workflow_job_key(p_run_id, p_output_id),
                                      max_attempts => v_run.max_attempts);
      return json_build_object('outcome', 'wait');
    end if;
  end if;

  update kiln_private.workflow_run_outputs
    set status = 'running', waiting = false, attempts = attempts + 1, worker_id = p_worker_id, job_id = p_job_id,
        started_at = coalesce(started_at, v_now), updated_at = now()
    where run_id = p_run_id and output_node_id = p_output_id
    returning * into v_out;
  if v_run.status = 'pending' then
    update kiln_private.workflow_runs set status = 'running', started_at = v_now, updated_at = now() where id = p_run_id;
  end if;
  return json_build_object(
    'outcome', 'run',
    'attempt', v_out.attempts,
    'max_attempts', v_run.max_attempts,
    'account_id', v_run.account_id,
    'spec', v_out.spec,
    'charge_id', v_out.charge_id,
    'reserved_micros', v_out.reserved_micros,
    'upstream', (select coalesce(json_object_agg(u.output_node_id, u.result), '{}'::json)
                 from kiln_private.workflow_run_outputs u
                 where u.run_id = p_run_id and u.output_node_id = any (v_out.refs) and u.status = 'completed'));
end;
$$;
comment on function kiln.start_workflow_output(uuid, text, text, bigint, int, int) is
  'Moves a run output to running for a worker''s job, respecting the account''s parallel slots and the run window (outcome run, with the spec and upstream results), or says why not: wait (slots full; re-queued), busy (a live worker runs it), done (settled, abandoned or expired), not_ready, missing.';
