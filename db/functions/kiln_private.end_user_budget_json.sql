-- functions/kiln_private.end_user_budget_json.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.end_user_budget_json.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.end_user_budget_json(p_pool_id uuid, p_end_user text)
 RETURNS json
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_cap kiln_private.end_user_budgets;
  v_start timestamptz;
  v_settled bigint := 0;
  v_held bigint := 0;
begin
  select * into v_cap from kiln_private.end_user_budgets where pool_id = p_pool_id and end_user = p_end_user;
  if v_cap.pool_id is not null then
    -- A cap: its running totals, what enforcement reads.
    v_start := kiln_private.end_user_period(v_cap.period, now());
    select b.settled_micros, b.held_micros into v_settled, v_held
      from kiln_private.end_user_budget_periods b
      where b.pool_id = p_pool_id and b.end_user = p_end_user and b.period_start = v_start;
  else
    -- None: this calendar month's charges (UTC).
    v_start := kiln_private.end_user_period('month', now());
    select s.settled_micros, s.held_micros into v_settled, v_held from kiln_private.end_user_spend(p_pool_id, p_end_user, v_start) s;
  end if;
  v_settled := coalesce(v_settled, 0);
  v_held := coalesce(v_held, 0);
  return json_build_object(
    'endUser', p_end_user,
    'budgetMicros', v_cap.budget_micros,
    'period', coalesce(v_cap.period, 'month'),
    'rpm', v_cap.rpm,
    'periodStart', to_char(v_start at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'usedMicros', v_settled + v_held,
    'heldMicros', v_held,
    'remainingMicros', case when v_cap.pool_id is not null then greatest(v_cap.budget_micros - v_settled - v_held, 0) end,
    'updatedAt', to_char(v_cap.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
end;
$function$;
comment on function kiln_private.end_user_budget_json(uuid,text) is 'An end user of a pool as GET /end-users/{endUser} shows it: its cap (budgetMicros, period, rpm; null and ''month'' without one) and this period''s use: settled + held (usedMicros), held, and what remains of the cap.';
