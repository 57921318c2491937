-- functions/kiln.list_workflow_runs_for_keys.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_workflow_runs_for_keys.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_workflow_runs_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_workflow_ids uuid[], p_limits integer[], p_offsets integer[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select r.*, case when r.status = 'ok' then kiln.list_workflow_runs(r.account_id, r.workspace_id, p_workflow_ids[r.ord], p_limits[r.ord], p_offsets[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.list_workflow_runs_for_keys(bytea[],integer,uuid[],integer[],integer[]) is 'GET /workflows/{id}/runs for a batch in one transaction: authorizes each key (read scope, the per-key read bucket and the key''s own rpm) and, when admitted, returns that page of runs (kiln.list_workflow_runs; null body when the workflow is not the key''s scope''s).';
