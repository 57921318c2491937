-- functions/kiln_private.schedule_run_deadline.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.schedule_run_deadline.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.schedule_run_deadline(p_run_id uuid, p_at timestamp with time zone)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform graphile_worker.add_job('workflow__check_deadline', json_build_object('run', p_run_id),
                                  run_at => p_at, job_key => kiln_private.workflow_job_key(p_run_id, null), max_attempts => 10);
end;
$function$;
comment on function kiln_private.schedule_run_deadline(uuid,timestamp with time zone) is 'Queues (or moves) the run-window check of a run (task workflow__check_deadline).';
