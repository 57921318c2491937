-- functions/kiln.sweep_workers.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.sweep_workers.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.sweep_workers(p_stale_seconds integer)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
        -- The job it runs under (for a batch line, its group's job, which runs it again after a
        -- crash).
        and not exists (
          select 1 from graphile_worker.jobs j
            where j.id = g.job_id and (j.locked_by is not null or (g.batch_id is not null and j.attempts < j.max_attempts)))
        -- A batch line that has not started holds no reservation: its batch's job (a group of
        -- lines), its expiry or a cancel ends it (docs/api.md, "Batches").
        and not (g.batch_id is not null and g.status = 'pending' and g.charge_id is null)
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
$function$;
comment on function kiln.sweep_workers(integer) is 'Crash recovery at the heartbeat interval: unlock_dead_workers, unlock_silent_pools, then fails generations that no job can finish any more (read from the graphile_worker.jobs view), so no reservation dangles.';
