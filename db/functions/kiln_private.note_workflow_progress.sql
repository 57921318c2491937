-- functions/kiln_private.note_workflow_progress.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.note_workflow_progress.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.note_workflow_progress(p_run_id uuid, p_settled integer)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_run kiln_private.workflow_runs;
begin
  update kiln_private.workflow_runs
    set settled = settled + p_settled, updated_at = now()
    where id = p_run_id
    returning * into v_run;
  if v_run.status in ('pending', 'running') and v_run.settled = v_run.total then
    update kiln_private.workflow_runs
      set status = 'completed', started_at = coalesce(started_at, clock_timestamp()), completed_at = clock_timestamp()
      where id = p_run_id;
    perform kiln_private.write_back_workflow_run(p_run_id);
  end if;
  if v_run.settled + v_run.abandoned >= v_run.total then
    -- Nothing left in flight: the deadline check is no longer needed.
    perform graphile_worker.remove_job(kiln_private.workflow_job_key(p_run_id, null));
  end if;
end;
$function$;
comment on function kiln_private.note_workflow_progress(uuid,integer) is 'Counts newly settled outputs; completes the run (with write-back) when all settled without failure.';
