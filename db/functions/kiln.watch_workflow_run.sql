-- functions/kiln.watch_workflow_run.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.watch_workflow_run.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.watch_workflow_run(p_account_id uuid, p_workflow_id uuid, p_run_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select (kiln.get_workflow_run(r.account_id, r.workflow_id, r.id)::jsonb
          || jsonb_build_object('open', r.settled + r.abandoned < r.total))::json
  from kiln_private.workflow_runs r
  where r.id = p_run_id and r.account_id = p_account_id and r.workflow_id = p_workflow_id;
$function$;
comment on function kiln.watch_workflow_run(uuid,uuid,uuid) is 'kiln.get_workflow_run plus `open`: whether any output of the run can still settle (settled + abandoned < total). Null when the run is not that account''s run of that workflow.';
