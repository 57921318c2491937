-- functions/kiln.get_end_user_budget.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_end_user_budget.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_end_user_budget(p_account_id uuid, p_workspace_id uuid, p_end_user text)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  -- The caller's billing scope; none for a workspace-bound caller whose account left it.
  v_pool uuid := kiln_private.workflow_scope(p_account_id, p_workspace_id);
begin
  if v_pool is null then
    raise exception 'workspace not found' using errcode = 'KN001';
  end if;
  return kiln_private.end_user_budget_json(v_pool, p_end_user);
end;
$function$;
comment on function kiln.get_end_user_budget(uuid,uuid,text) is 'GET /end-users/{endUser}: the end user''s cap and use in the caller''s billing scope (the workspace for a workspace-bound caller while its account is a member — else KN001 —, otherwise the account). An end user without a cap answers its use this calendar month (UTC) with budgetMicros null.';
