-- functions/kiln_private.workflow_scope.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.workflow_scope.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.workflow_scope(p_account_id uuid, p_workspace_id uuid)
 RETURNS uuid
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select case
    when p_workspace_id is null then p_account_id
    when exists (select 1 from kiln_private.workspace_members m
                 where m.workspace_id = p_workspace_id and m.account_id = p_account_id and m.left_at is null) then p_workspace_id
  end;
$function$;
comment on function kiln_private.workflow_scope(uuid,uuid) is 'The scope whose workflows a caller reaches: the workspace of a workspace-bound key or identity while its account is a member, the account for a personal one; null (no workflow at all) for a member who left.';
