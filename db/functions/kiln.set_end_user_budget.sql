-- functions/kiln.set_end_user_budget.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.set_end_user_budget.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.set_end_user_budget(p_account_id uuid, p_workspace_id uuid, p_end_user text, p_budget_micros bigint, p_period text, p_rpm integer)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  -- The caller's billing scope; none for a workspace-bound caller whose account left it.
  v_pool uuid := kiln_private.workflow_scope(p_account_id, p_workspace_id);
  v_old kiln_private.end_user_budgets;
  v_start timestamptz;
  v_settled bigint;
  v_held bigint;
begin
  if v_pool is null then
    raise exception 'workspace not found' using errcode = 'KN001';
  end if;
  if p_end_user is null or char_length(p_end_user) not between 1 and 128 then
    raise exception 'endUser: must be 1 to 128 characters' using errcode = 'KI001';
  end if;
  if p_budget_micros is null or p_budget_micros < 0 then
    raise exception 'budgetMicros: must be a whole number of at least 0' using errcode = 'KI001';
  end if;
  if p_period is null or p_period not in ('day', 'month') then
    raise exception 'period: must be one of "day", "month"' using errcode = 'KI001';
  end if;
  if p_rpm is not null and p_rpm < 1 then
    raise exception 'rpm: must be at least 1' using errcode = 'KI001';
  end if;
  select * into v_old from kiln_private.end_user_budgets where pool_id = v_pool and end_user = p_end_user for update;
  if v_old.pool_id is null then
    insert into kiln_private.end_user_budgets (pool_id, end_user, budget_micros, period, rpm)
      values (v_pool, p_end_user, p_budget_micros, p_period, p_rpm)
      on conflict (pool_id, end_user) do update
        set budget_micros = excluded.budget_micros, period = excluded.period, rpm = excluded.rpm, updated_at = now();
  elsif (v_old.budget_micros, v_old.period, v_old.rpm) is distinct from (p_budget_micros, p_period, p_rpm) then
    update kiln_private.end_user_budgets set budget_micros = p_budget_micros, period = p_period, rpm = p_rpm, updated_at = now()
      where pool_id = v_pool and end_user = p_end_user;
  end if;
  if v_old.pool_id is null or v_old.period <> p_period then
    -- A new cap, or a new period: its period counts what the end user spent in it already. The
    -- open reservations of the period are held on it from now on (locked first, as settle_charge
    -- locks a charge before its totals), then the period's totals are counted afresh.
    v_start := kiln_private.end_user_period(p_period, now());
    update kiln_private.charges set end_user_period = v_start
      where pool_id = v_pool and end_user = p_end_user and created_at >= v_start and status = 'reserved'
        and end_user_period is distinct from v_start;
    insert into kiln_private.end_user_budget_periods (pool_id, end_user, period_start)
      values (v_pool, p_end_user, v_start)
      on conflict (pool_id, end_user, period_start) do nothing;
    perform 1 from kiln_private.end_user_budget_periods
      where pool_id = v_pool and end_user = p_end_user and period_start = v_start for update;
    select coalesce(sum(c.settled_micros) filter (where c.status = 'settled'), 0),
           coalesce(sum(c.reserved_micros) filter (where c.status = 'reserved' and c.end_user_period = v_start), 0)
      into v_settled, v_held
      from kiln_private.charges c
      where c.pool_id = v_pool and c.end_user = p_end_user and c.created_at >= v_start;
    update kiln_private.end_user_budget_periods set settled_micros = v_settled, held_micros = v_held
      where pool_id = v_pool and end_user = p_end_user and period_start = v_start;
  end if;
  return kiln_private.end_user_budget_json(v_pool, p_end_user);
end;
$function$;
comment on function kiln.set_end_user_budget(uuid,uuid,text,bigint,text,integer) is 'PUT /end-users/{endUser}: sets the end user''s cap in the caller''s billing scope (the workspace for a workspace-bound caller, else the account): budget_micros per period (''day'' = UTC day, ''month'' = calendar month in UTC) and rpm (null = none). A new cap, or a new period, starts from what the end user already spent in the period (its charges, its open reservations then held on the cap). Audited (end_user.budget_set, only when something changed). KI001 for a bad value.';
