-- functions/kiln.list_workflow_runs.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_workflow_runs.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_workflow_runs(p_account_id uuid, p_workspace_id uuid, p_workflow_id uuid, p_limit integer, p_offset integer)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- A deleted workflow's runs stay listed: they remain readable.
  select case when exists (select 1 from kiln_private.workflows w
                           where w.id = p_workflow_id and w.scope_id = any (kiln_private.workflow_scopes(p_account_id, p_workspace_id))) then (
    select coalesce(json_agg(json_build_object(
             'id', r.id,
             'status', r.status,
             'progress', json_build_object('total', r.total, 'completed', r.settled),
             'createdAt', to_char(r.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'completedAt', to_char(r.completed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'retryOf', r.retry_of)
           order by r.created_at desc, r.id desc), '[]'::json)
    from (select * from kiln_private.workflow_runs r
          where r.workflow_id = p_workflow_id and r.account_id = p_account_id
          order by r.created_at desc, r.id desc
          limit p_limit offset p_offset) r) end;
$function$;
comment on function kiln.list_workflow_runs(uuid,uuid,uuid,integer,integer) is 'A page of the account''s runs of a workflow of its scope (deleted or not), newest first (id, status, progress, createdAt, completedAt, retryOf); null when the workflow is not the scope''s.';
