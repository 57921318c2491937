-- functions/kiln.list_workflow_runs_for_callers.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_workflow_runs_for_callers.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_workflow_runs_for_callers(p_account_ids uuid[], p_workspace_ids uuid[], p_workflow_ids uuid[], p_limits integer[], p_offsets integer[])
 RETURNS TABLE(ord integer, body json)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select c.ord::int, kiln.list_workflow_runs(c.account_id, p_workspace_ids[c.ord], p_workflow_ids[c.ord], p_limits[c.ord], p_offsets[c.ord])
  from unnest(p_account_ids) with ordinality c(account_id, ord);
$function$;
comment on function kiln.list_workflow_runs_for_callers(uuid[],uuid[],uuid[],integer[],integer[]) is 'GET /workflows/{id}/runs for a batch of callers already authorized: the page of runs of each (kiln.list_workflow_runs; null body when the workflow is not the caller''s scope''s), by 1-based ord. Read-only: runs on a streaming replica.';
