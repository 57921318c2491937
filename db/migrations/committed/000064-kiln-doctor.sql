--! Previous: sha1:9487879421b13a8ce8754e40f9f8fcb2e2abbe45
--! Hash: sha1:3eff69d4bc3aac3e3ca0d8579234ad700ac5c561
--! Message: kiln doctor: doctor_check, doctor_fix and doctor_stored_objects

--! split: 1-current.sql
-- Enter migration here

--! split: 12-doctor.sql
-- kiln doctor (docs/operators.md, "Backups and restore"): checks a restored or upgraded database,
-- and --fix repairs what is safe to repair, each repair audited.
-- included from db/functions/kiln.doctor_check.sql
-- functions/kiln.doctor_check.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.doctor_check.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.doctor_check(p_stale_seconds integer, p_execution_seconds integer, p_grace_seconds integer, p_limit integer)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_stale interval := make_interval(secs => greatest(p_stale_seconds, 1));
  v_limit int := least(greatest(coalesce(p_limit, 100), 1), 10000);
  v_dead_workers json;
  v_orphan_jobs json;
  v_orphan_charges json;
  v_unsettled json;
  v_double json;
  v_missing json;
begin
  -- Worker leases nobody holds any more (after a restore: every lease of the old cluster), and
  -- pre-lease workers silent past the stale window.
  with dead as (
    select h.*, (select count(*) from graphile_worker.jobs j where j.locked_by = h.pool_id) as locked_jobs
      from kiln_private.worker_heartbeats h
      where (h.lease_key is not null and not kiln_private.lease_key_held(h.lease_key))
         or (h.lease_key is null and h.last_seen < now() - v_stale)
  )
  select json_build_object('count', count(*), 'fixable', count(*), 'items', coalesce((
      select json_agg(json_build_object('worker_id', d.worker_id, 'pool_id', d.pool_id, 'hostname', d.hostname, 'pid', d.pid,
                                        'started_at', d.started_at, 'last_seen', d.last_seen, 'locked_jobs', d.locked_jobs,
                                        'fixable', true) order by d.last_seen)
        from (select * from dead order by last_seen limit v_limit) d), '[]'))
    into v_dead_workers from dead;

  -- Jobs locked by a worker that is not alive: a dead lease, or a pool no live worker registered.
  -- Those of a registered dead lease, or locked longer than the stale window, are safe to unlock;
  -- a younger lock of an unknown pool may be a worker still starting.
  with orphan as (
    select j.id, j.task_identifier, j.key, j.locked_by, j.locked_at,
           exists (select 1 from kiln_private.worker_heartbeats h where h.pool_id = j.locked_by) as registered
      from graphile_worker.jobs j
      where j.locked_by is not null and not kiln_private.worker_alive(j.locked_by, p_stale_seconds)
  )
  select json_build_object('count', count(*), 'fixable', count(*) filter (where registered or locked_at < now() - v_stale), 'items', coalesce((
      select json_agg(json_build_object('job_id', o.id, 'task', o.task_identifier, 'key', o.key, 'locked_by', o.locked_by,
                                        'locked_at', o.locked_at, 'registered', o.registered,
                                        'fixable', o.registered or o.locked_at < now() - v_stale) order by o.locked_at)
        from (select * from orphan order by locked_at limit v_limit) o), '[]'))
    into v_orphan_jobs from orphan;

  -- Ledger rows whose generation or run is not in the database (nor any charge naming neither).
  -- A reservation among them can be released; a settled one is money billed for nothing that
  -- exists here, for the operator to look at; a released one costs nothing and is left alone.
  with orphan as (
    select c.* from kiln_private.charges c
      where c.status <> 'released'
        and ((c.generation_id is null and c.workflow_run_id is null)
          or (c.generation_id is not null and not exists (select 1 from kiln_private.generations g where g.id = c.generation_id))
          or (c.workflow_run_id is not null and not exists (select 1 from kiln_private.workflow_runs r where r.id = c.workflow_run_id)))
  )
  select json_build_object('count', count(*), 'fixable', count(*) filter (where status = 'reserved'), 'items', coalesce((
      select json_agg(json_build_object('charge_id', o.id, 'status', o.status, 'pool_id', o.pool_id, 'account_id', o.account_id,
                                        'generation_id', o.generation_id, 'workflow_run_id', o.workflow_run_id, 'node_id', o.node_id,
                                        'reserved_micros', o.reserved_micros, 'settled_micros', o.settled_micros,
                                        'created_at', o.created_at, 'fixable', o.status = 'reserved') order by o.created_at)
        from (select * from orphan order by created_at limit v_limit) o), '[]'))
    into v_orphan_charges from orphan;

  -- Reservations never settled: held for a generation that has ended, held by a charge its
  -- generation no longer points at (nothing settles it), or held past the generation's run
  -- window (every attempt's deadline and the grace, from when it started or, still pending, was
  -- created; a generation queued behind its account's parallel slots counts from creation too).
  with held as (
    select c.id, c.pool_id, c.generation_id, c.reserved_micros, c.created_at, g.status as generation_status,
           case when g.status in ('completed', 'failed') then 'generation_ended'
                when g.charge_id is distinct from c.id then 'superseded'
                else 'past_run_window' end as reason
      from kiln_private.charges c
      join kiln_private.generations g on g.id = c.generation_id
      where c.status = 'reserved'
        and (g.status in ('completed', 'failed')
             or g.charge_id is distinct from c.id
             or coalesce(g.started_at, g.created_at)
                  < now() - make_interval(secs => g.max_attempts::double precision * greatest(p_execution_seconds, 1) + greatest(p_grace_seconds, 0)))
  )
  select json_build_object('count', count(*), 'fixable', count(*) filter (where reason <> 'past_run_window'), 'items', coalesce((
      select json_agg(json_build_object('charge_id', h.id, 'pool_id', h.pool_id, 'generation_id', h.generation_id,
                                        'generation_status', h.generation_status, 'reason', h.reason,
                                        'reserved_micros', h.reserved_micros, 'created_at', h.created_at,
                                        'fixable', h.reason <> 'past_run_window') order by h.created_at)
        from (select * from held order by created_at limit v_limit) h), '[]'))
    into v_unsettled from held;

  -- A generation settled more than once: charged twice.
  with twice as (
    select c.generation_id, count(*) as settled, sum(c.settled_micros) as settled_micros, min(c.created_at) as first_at
      from kiln_private.charges c
      where c.status = 'settled' and c.generation_id is not null
      group by c.generation_id having count(*) > 1
  )
  select json_build_object('count', count(*), 'fixable', 0, 'items', coalesce((
      select json_agg(json_build_object('generation_id', t.generation_id, 'settled_charges', t.settled,
                                        'settled_micros', t.settled_micros, 'fixable', false) order by t.first_at)
        from (select * from twice order by first_at limit v_limit) t), '[]'))
    into v_double from twice;

  -- Objects referenced by a generation's result but not in the store (no row; retention's
  -- expired paths excepted). The bytes of the s3 store's rows are checked by the caller (HEAD).
  with missing as (
    select g.id, g.account_id, g.result->>'path' as path, g.finished_at
      from kiln_private.generations g
      where g.status = 'completed' and g.type = 'image' and g.result ? 'path'
        and not exists (select 1 from kiln_private.objects o where o.path = g.result->>'path')
        and not exists (select 1 from kiln_private.expired_objects e where e.path = g.result->>'path')
  )
  select json_build_object('count', count(*), 'fixable', 0, 'items', coalesce((
      select json_agg(json_build_object('generation_id', m.id, 'account_id', m.account_id, 'path', m.path,
                                        'finished_at', m.finished_at, 'fixable', false) order by m.finished_at desc)
        from (select * from missing order by finished_at desc limit v_limit) m), '[]'))
    into v_missing from missing;

  return json_build_object(
    'dead_workers', v_dead_workers,
    'orphan_jobs', v_orphan_jobs,
    'orphan_charges', v_orphan_charges,
    'unsettled_reservations', v_unsettled,
    'double_charges', v_double,
    'missing_objects', v_missing);
end;
$function$;
comment on function kiln.doctor_check(integer,integer,integer,integer) is '`kiln doctor`: checks a restored or upgraded database and returns, per check, the count, how many of them kiln.doctor_fix repairs (fixable) and up to p_limit items (each with its own fixable): dead_workers (leases no session holds), orphan_jobs (locked by workers not alive), orphan_charges (held or settled ledger rows without their generation or run), unsettled_reservations (held for an ended generation, superseded, or past the run window: p_execution_seconds per attempt plus p_grace_seconds), double_charges, missing_objects (generation results without a store row). Reads only.';
-- end of db/functions/kiln.doctor_check.sql
-- included from db/functions/kiln.doctor_fix.sql
-- functions/kiln.doctor_fix.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.doctor_fix.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.doctor_fix(p_stale_seconds integer)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_stale interval := make_interval(secs => greatest(p_stale_seconds, 1));
  v_row record;
  v_jobs int;
  v_workers int := 0;
  v_pools int := 0;
  v_unlocked int := 0;
  v_released int := 0;
  v_micros bigint := 0;
begin
  -- One sweeper at a time: the workers' own sweep (kiln.unlock_dead_workers) waits for this one.
  perform pg_advisory_xact_lock(hashtextextended('kiln.sweep_workers', 0));

  -- Leases no session holds (and pre-lease workers silent past the stale window): their jobs
  -- unlocked so a live worker takes them, their rows forgotten.
  for v_row in
    select h.* from kiln_private.worker_heartbeats h
      where (h.lease_key is not null and not kiln_private.lease_key_held(h.lease_key))
         or (h.lease_key is null and h.last_seen < now() - v_stale)
      order by h.last_seen
      for update
  loop
    v_jobs := 0;
    if v_row.pool_id is not null then
      select count(*) into v_jobs from graphile_worker.jobs j where j.locked_by = v_row.pool_id;
      perform graphile_worker.force_unlock_workers(array[v_row.pool_id]);
    end if;
    delete from kiln_private.worker_heartbeats where worker_id = v_row.worker_id;
    perform kiln_private.audit(null, 'doctor.worker_forgotten', 'worker', v_row.worker_id,
      jsonb_build_object('pool_id', v_row.pool_id, 'hostname', v_row.hostname, 'pid', v_row.pid,
                         'last_seen', v_row.last_seen, 'jobs_unlocked', v_jobs));
    v_workers := v_workers + 1;
    v_unlocked := v_unlocked + v_jobs;
  end loop;

  -- Jobs locked longer than the stale window by pools no live worker registered.
  for v_row in
    select j.locked_by as pool_id, count(*)::int as n, min(j.locked_at) as since
      from graphile_worker.jobs j
      where j.locked_by is not null and j.locked_at < now() - v_stale
        and not kiln_private.worker_alive(j.locked_by, p_stale_seconds)
      group by j.locked_by
  loop
    perform graphile_worker.force_unlock_workers(array[v_row.pool_id]);
    perform kiln_private.audit(null, 'doctor.jobs_unlocked', 'worker', v_row.pool_id,
      jsonb_build_object('jobs_unlocked', v_row.n, 'locked_since', v_row.since));
    v_pools := v_pools + 1;
    v_unlocked := v_unlocked + v_row.n;
  end loop;
  if v_unlocked > 0 then
    -- Wake idle workers now rather than at their next poll.
    perform pg_notify('jobs:insert', json_build_object('r', random(), 'count', v_unlocked)::text);
  end if;

  -- Reservations nothing will settle: of an ended generation, superseded by its generation's own
  -- charge, or of a generation or run that is not in the database. Released (nothing charged),
  -- each in its billing scope's audit log.
  for v_row in
    select c.id, c.pool_id, c.generation_id, c.workflow_run_id, c.reserved_micros,
           case when c.generation_id is null and c.workflow_run_id is null then 'no_generation'
                when g.id is null and c.generation_id is not null then 'no_generation'
                when c.workflow_run_id is not null and not exists (select 1 from kiln_private.workflow_runs r where r.id = c.workflow_run_id) then 'no_run'
                when g.status in ('completed', 'failed') then 'generation_ended'
                else 'superseded' end as reason
      from kiln_private.charges c
      left join kiln_private.generations g on g.id = c.generation_id
      where c.status = 'reserved'
        and ((c.generation_id is null and c.workflow_run_id is null)
             or (c.generation_id is not null and g.id is null)
             or (c.workflow_run_id is not null and not exists (select 1 from kiln_private.workflow_runs r where r.id = c.workflow_run_id))
             or g.status in ('completed', 'failed')
             or g.charge_id is distinct from c.id)
      order by c.created_at
  loop
    perform kiln.release_charge(v_row.id);
    perform kiln_private.audit(v_row.pool_id, 'doctor.reservation_released', 'charge', v_row.id::text,
      jsonb_build_object('reason', v_row.reason, 'generation_id', v_row.generation_id,
                         'workflow_run_id', v_row.workflow_run_id, 'reserved_micros', v_row.reserved_micros));
    v_released := v_released + 1;
    v_micros := v_micros + v_row.reserved_micros;
  end loop;

  return json_build_object('workers_forgotten', v_workers, 'pools_unlocked', v_pools, 'jobs_unlocked', v_unlocked,
                           'reservations_released', v_released, 'released_micros', v_micros);
end;
$function$;
comment on function kiln.doctor_fix(integer) is '`kiln doctor --fix`: repairs what kiln.doctor_check finds and is safe to repair, one audit entry (actor: the operator) per repair: unlocks the jobs of dead workers and forgets their leases (doctor.worker_forgotten), unlocks jobs locked past the stale window by pools no live worker registered (doctor.jobs_unlocked), and releases reservations nothing will settle — of ended, missing or superseding generations and of missing runs (doctor.reservation_released, in the billing scope). Settled charges, open generations and missing objects are left to the operator.';
-- end of db/functions/kiln.doctor_fix.sql
-- included from db/functions/kiln.doctor_stored_objects.sql
-- functions/kiln.doctor_stored_objects.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.doctor_stored_objects.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.doctor_stored_objects(p_newest boolean, p_after text, p_limit integer)
 RETURNS TABLE(path text, location text, created_at timestamp with time zone)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select o.path, o.location, o.created_at
  from kiln_private.objects o
  where o.backend = 's3' and (p_newest or o.path > coalesce(p_after, ''))
  order by case when p_newest then o.created_at end desc, o.path
  limit p_limit;
$function$;
comment on function kiln.doctor_stored_objects(boolean,text,integer) is '`kiln doctor`: the objects whose bytes are in the s3 bucket, for the caller to HEAD: the newest p_limit (p_newest), or the next p_limit by path after p_after (--full).';
-- end of db/functions/kiln.doctor_stored_objects.sql
