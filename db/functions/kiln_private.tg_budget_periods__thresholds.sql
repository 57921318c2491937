-- functions/kiln_private.tg_budget_periods__thresholds.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_budget_periods__thresholds.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_budget_periods__thresholds()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_old bigint := case when tg_op = 'INSERT' then 0 else old.settled_micros end;
  v_budget bigint;
  v_workspace uuid;
  v_anchor timestamptz;
  v_t int;
begin
  select a.budget_micros, null::uuid, a.period_anchor into v_budget, v_workspace, v_anchor
    from kiln_private.accounts a where a.id = new.pool_id;
  if not found then
    select w.plan_budget_micros, w.id, w.plan_period_anchor into v_budget, v_workspace, v_anchor
      from kiln_private.workspaces w where w.id = new.pool_id;
  end if;
  if v_budget is null or v_budget = 0 then return null; end if;
  foreach v_t in array array[50, 80, 100] loop
    -- Crossed by this settlement: below before, at or above now (integer maths, no rounding).
    if v_old * 100 < v_budget * v_t and new.settled_micros * 100 >= v_budget * v_t then
      insert into kiln_private.budget_thresholds (pool_id, period_start, threshold)
        values (new.pool_id, new.period_start, v_t) on conflict do nothing;
      if found then
        perform kiln_private.emit_event(new.pool_id, 'budget.threshold', null, json_build_object(
          'scope', case when v_workspace is null then 'personal' else 'workspace' end,
          'workspaceId', v_workspace,
          'threshold', v_t,
          'usedMicros', new.settled_micros,
          'budgetMicros', v_budget,
          'periodStart', to_char(new.period_start at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
          'resetsAt', to_char((new.period_start + interval '1 month') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')));
      end if;
    end if;
  end loop;
  return null;
end;
$function$;
comment on function kiln_private.tg_budget_periods__thresholds() is 'Trigger: a settlement that takes a pool''s settled usage across 50, 80 or 100 % of its budget emits budget.threshold once per pool, period and threshold.';
