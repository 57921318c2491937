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
