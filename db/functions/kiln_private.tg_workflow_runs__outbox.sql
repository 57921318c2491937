-- functions/kiln_private.tg_workflow_runs__outbox.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_workflow_runs__outbox.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_workflow_runs__outbox()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- Deferred to the end of the transaction: the run's body then includes every change the
  -- transaction made after the status (counters, the output that failed it).
  perform kiln_private.emit_event(coalesce(new.workspace_id, new.account_id),
    case when new.status = 'completed' then 'workflow_run.completed' else 'workflow_run.failed' end,
    new.id, kiln.get_workflow_run(new.account_id, new.workflow_id, new.id));
  return null;
end;
$function$;
comment on function kiln_private.tg_workflow_runs__outbox() is 'Trigger (deferred to commit): a run reaching completed or failed emits workflow_run.completed / workflow_run.failed (data = the run as GET …/runs/{runId} reads it at the end of the transaction) to its billing scope.';
