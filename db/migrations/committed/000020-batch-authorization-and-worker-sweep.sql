--! Previous: sha1:eb28f473b3db0023a53c7063cab973692653fb29
--! Hash: sha1:6a757d9792a753813f6625850c1c967f26b9ca0a
--! Message: one batch authorization and a sweep that reads the workers

--! split: 1-current.sql
-- One batch authorization for the GET reads and the job controls: they differed only in the
-- scope they ask for (read; write for cancel), each restating the call of kiln.authorize_requests.

create or replace function kiln_private.authorize_keys(p_key_hashes bytea[], p_scope text, p_read_rpm int)
  returns table (ord int, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after int)
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select r.ord, r.status, r.key_id, r.account_id, r.workspace_id, r.tier, r.scopes, r.retry_after
  from kiln.authorize_requests(
         p_key_hashes,
         array_fill(p_scope, array[cardinality(p_key_hashes)]),
         array_fill('read'::text, array[cardinality(p_key_hashes)]),
         array_fill(p_read_rpm, array[cardinality(p_key_hashes)]),
         array_fill(false, array[cardinality(p_key_hashes)])) r;
$$;
comment on function kiln_private.authorize_keys(bytea[], text, int) is
  'kiln.authorize_requests for a batch of keys that all need p_scope and draw on the per-key read bucket at p_read_rpm (and each key''s own rpm).';
alter function kiln_private.authorize_keys(bytea[], text, int) set plan_cache_mode = force_generic_plan;

create or replace function kiln_private.authorize_reads(p_key_hashes bytea[], p_read_rpm int)
  returns table (ord int, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after int)
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select * from kiln_private.authorize_keys(p_key_hashes, 'read', p_read_rpm);
$$;
alter function kiln_private.authorize_reads(bytea[], int) set plan_cache_mode = force_generic_plan;

create or replace function kiln_private.authorize_controls(p_key_hashes bytea[], p_read_rpm int)
  returns table (ord int, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after int)
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select * from kiln_private.authorize_keys(p_key_hashes, 'write', p_read_rpm);
$$;
alter function kiln_private.authorize_controls(bytea[], int) set plan_cache_mode = force_generic_plan;

-- The once-a-second sweep reads the workers' own rows, not graphile-worker's jobs table: a dead
-- worker is known by its free lease lock, and force_unlock_workers takes its pool id. Scanning
-- the jobs table for locks (which grows with the queue) is left to the full sweep, which runs at
-- the heartbeat interval and covers pools that never registered (a process that died before it
-- could) and workers from before leases.

create or replace function kiln.unlock_dead_workers(p_stale_seconds int) returns text[]
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_dead text[];
begin
  -- One sweeper at a time; the others skip this round.
  if not pg_try_advisory_xact_lock(hashtextextended('kiln.sweep_workers', 0)) then
    return null;
  end if;
  select coalesce(array_agg(h.pool_id) filter (where h.pool_id is not null), array[]::text[]) into v_dead
    from kiln_private.worker_heartbeats h
    where h.lease_key is not null and not kiln_private.lease_key_held(h.lease_key);
  if cardinality(v_dead) > 0 then
    perform graphile_worker.force_unlock_workers(v_dead);
    -- Wake idle workers now rather than at their next poll.
    perform pg_notify('jobs:insert', json_build_object('r', random(), 'count', cardinality(v_dead))::text);
  end if;
  delete from kiln_private.worker_heartbeats h
    where h.lease_key is not null and not kiln_private.lease_key_held(h.lease_key);
  return v_dead;
end;
$$;
comment on function kiln.unlock_dead_workers(int) is
  'Crash recovery, run by every worker about once a second: unlocks (force_unlock_workers) the jobs of registered workers whose lease lock is free — their process or connection died — so they run again elsewhere within seconds, and forgets them. Reads only the workers'' rows. Returns the pools unlocked (null when another sweep was running).';

create or replace function kiln_private.unlock_silent_pools(p_stale_seconds int) returns text[]
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_stale interval := make_interval(secs => p_stale_seconds);
  v_dead text[];
begin
  -- Pools holding job locks older than the stale window whose worker is not alive: one that never
  -- registered, or one from before leases that stopped heartbeating.
  select coalesce(array_agg(distinct l.locked_by), array[]::text[]) into v_dead
    from (
      select j.locked_by from graphile_worker._private_jobs j
        where j.locked_by is not null and j.locked_at < now() - v_stale
      union
      select q.locked_by from graphile_worker._private_job_queues q
        where q.locked_by is not null and q.locked_at < now() - v_stale
    ) l
    where not kiln_private.worker_alive(l.locked_by, p_stale_seconds);
  if cardinality(v_dead) > 0 then
    perform graphile_worker.force_unlock_workers(v_dead);
    perform pg_notify('jobs:insert', json_build_object('r', random(), 'count', cardinality(v_dead))::text);
  end if;
  delete from kiln_private.worker_heartbeats h where h.lease_key is null and h.last_seen < now() - v_stale;
  return v_dead;
end;
$$;
comment on function kiln_private.unlock_silent_pools(int) is
  'The full sweep''s part of crash recovery: unlocks the jobs of pools that hold locks older than the stale window and are not alive (never registered, or pre-lease workers without a recent heartbeat).';

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
  'Crash recovery at the heartbeat interval: unlock_dead_workers, unlock_silent_pools, then fails generations that no job can finish any more (no reservation dangles).';
