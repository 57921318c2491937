-- functions/kiln.expire_workflow_run.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.expire_workflow_run.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.expire_workflow_run(p_run_id uuid, p_stale_seconds integer)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;
comment on function kiln.expire_workflow_run(uuid,integer) is 'The run-window check: after the deadline, outputs not started fail the run (with a message saying so), and outputs no job can finish any more (read from the graphile_worker.jobs view) are failed; re-checks later while outputs are in flight.';
