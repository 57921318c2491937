-- functions/kiln.snapshot_workflow.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.snapshot_workflow.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.snapshot_workflow(p_account_id uuid, p_workspace_id uuid, p_id uuid)
 RETURNS TABLE(graph jsonb, models json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- FOR SHARE: an edit cannot commit between this read and the run insert of the same transaction.
  select w.graph,
         (select coalesce(json_agg(m), '[]'::json) from kiln.models m where m.enabled)
  from (select * from kiln_private.workflows
        where id = p_id and deleted_at is null and scope_id = any (kiln_private.workflow_scopes(p_account_id, p_workspace_id))
        for share) w;
$function$;
comment on function kiln.snapshot_workflow(uuid,uuid,uuid) is 'The graph of a workflow of the caller''s scope that is not deleted, locked until the end of the transaction, plus the enabled catalog: what a run snapshots.';
