--! Previous: sha1:662f4c482ef3b975ab7bf35e414912fa4664ced6
--! Hash: sha1:82687c713fb65cb4766415428f089797c44a2e6e
--! Message: end-user caps for current workspace members

--! split: 1-current.sql
-- A workspace-bound key whose account left the workspace no longer reads, sets or removes the
-- workspace's end-user caps (docs/api.md, "Budgets per end user").
-- included from db/functions/kiln.set_end_user_budget.sql
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
-- end of db/functions/kiln.set_end_user_budget.sql
-- included from db/functions/kiln.remove_end_user_budget.sql
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
-- end of db/functions/kiln.remove_end_user_budget.sql
-- included from db/functions/kiln.get_end_user_budget.sql
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
-- end of db/functions/kiln.get_end_user_budget.sql
