-- functions/kiln.remove_end_user_budget.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.remove_end_user_budget.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.remove_end_user_budget(p_account_id uuid, p_workspace_id uuid, p_end_user text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- The period totals stay: reservations held on the cap still end on them (settle_charge,
  -- release_charge), and a cap set again within the period counts afresh.
  -- The caller's billing scope (kiln_private.workflow_scope): none, so nothing, for a
  -- workspace-bound caller whose account left the workspace.
  delete from kiln_private.end_user_budgets
    where pool_id = kiln_private.workflow_scope(p_account_id, p_workspace_id) and end_user = p_end_user;
  if not found then
    raise exception 'end user "%" has no budget', p_end_user using errcode = 'KN001';
  end if;
end;
$function$;
comment on function kiln.remove_end_user_budget(uuid,uuid,text) is 'DELETE /end-users/{endUser}: removes the end user''s cap in the caller''s billing scope (audited: end_user.budget_removed). KN001 when it has none.';
