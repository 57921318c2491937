--! Message: end-user caps refuse a workflow run up front
-- A run for an end user whose cap is used up is refused when it starts, as one whose budget is
-- (docs/usage.md, "Budgets per end user").
drop function if exists kiln_private.check_run_budget(uuid, uuid);
--! include functions/kiln_private.check_run_budget.sql
--! include functions/kiln.start_workflow_run.sql
--! include functions/kiln.retry_workflow_run.sql

-- GET /usage/daily reads through kiln.get_daily_usage_groups(_for_keys|_for_callers), with or
-- without groupBy: the ungrouped readers are gone.
drop function if exists kiln.get_daily_usage_for_keys(bytea[], integer, date[], date[]);
drop function if exists kiln.get_daily_usage_for_callers(uuid[], uuid[], date[], date[]);
