-- functions/kiln_private.fail_workflow_run.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.fail_workflow_run.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.fail_workflow_run(p_run_id uuid, p_error text)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_n int;
begin
  update kiln_private.workflow_runs
    set status = 'failed', error = left(p_error, 2000), completed_at = clock_timestamp(), updated_at = now()
    where id = p_run_id and status in ('pending', 'running');
  if not found then
    return;
  end if;
  -- Downstream outputs (and anything not started yet) are abandoned; running ones may still record.
  v_n := kiln_private.abandon_workflow_outputs(p_run_id, null);
  update kiln_private.workflow_runs set abandoned = abandoned + v_n where id = p_run_id;
end;
$function$;
comment on function kiln_private.fail_workflow_run(uuid,text) is 'Fails a pending or running run with a client-safe message and abandons its not-started outputs.';
