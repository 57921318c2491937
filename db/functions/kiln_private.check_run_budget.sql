-- functions/kiln_private.check_run_budget.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.check_run_budget.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.check_run_budget(p_account_id uuid, p_workspace_id uuid, p_end_user text)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_usage json := kiln.get_usage(p_account_id, p_workspace_id);
  v_cap json;
begin
  -- The rule kiln.start_workflow_run applies: refuse a run that could not charge a single output.
  if v_usage->>'tier' = 'blocked' then
    raise exception 'this account cannot start generations' using errcode = 'KQ001';
  end if;
  if p_workspace_id is not null then
    if v_usage->>'workspace_used_micros' is null then
      raise exception 'the workspace''s Team plan is not active, or the key''s owner left the workspace' using errcode = 'KP001';
    end if;
    if (v_usage->>'workspace_remaining_micros')::bigint <= 0 then
      raise exception 'the budget for this period is exhausted' using errcode = 'KQ001';
    end if;
  elsif (v_usage->>'remaining_micros')::bigint <= 0 then
    raise exception 'the budget for this period is exhausted' using errcode = 'KQ001';
  end if;
  -- The run's end user's cap, when it has one (docs/usage.md, "Budgets per end user").
  if p_end_user is not null then
    v_cap := kiln_private.end_user_budget_json(coalesce(p_workspace_id, p_account_id), p_end_user);
    if v_cap->>'budgetMicros' is not null and (v_cap->>'remainingMicros')::bigint <= 0 then
      raise exception 'end user "%"''s budget for this % is exhausted', p_end_user, v_cap->>'period' using errcode = 'KQ001';
    end if;
  end if;
end;
$function$;
comment on function kiln_private.check_run_budget(uuid,uuid,text) is 'Raises KQ001 / KP001 when a run started by this caller for this end user (or none) could not charge a single output (blocked tier, exhausted budget, the end user''s cap used up, Team plan not active or owner left).';
