-- functions/kiln_private.reserve_budgets.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.reserve_budgets.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.reserve_budgets(p_account_ids uuid[], p_workspace_ids uuid[], p_key_ids uuid[], p_model_ids text[], p_origins text[], p_amounts bigint[], p_generation_ids uuid[], p_run_ids uuid[], p_node_ids text[], p_end_users text[], p_batch_ids uuid[] DEFAULT NULL::uuid[], p_metadata jsonb[] DEFAULT NULL::jsonb[])
 RETURNS TABLE(ord integer, charge_id uuid, error_code text, error_message text)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_column
declare
  v_n int := coalesce(cardinality(p_account_ids), 0);
  c_err text[];
  c_msg text[];
  c_pool uuid[];
  c_budget bigint[];
  c_kbudget bigint[];
  c_period timestamptz[];
  c_ebudget bigint[];
  c_eperiod timestamptz[];
  c_ename text[];
  c_id uuid[];
  v_pools uuid[];
  v_periods timestamptz[];
  v_totals bigint[];
  v_budgets bigint[];
  v_admitted uuid[];
  v_kadmitted uuid[] := '{}';
  v_eadmitted text[] := '{}';
  v_eus text[];
  v_i int;
begin
  if v_n = 0 then
    return;
  end if;
  -- 1. The reservation rules, for the whole set; each request gets its pool, budget and period,
  --    its key's own budget (null = the key has none: only the pool decides) and its end user's
  --    cap (null = none: one index probe, and only for a request that names an end user).
  select array_agg(x.err order by x.i), array_agg(x.msg order by x.i), array_agg(x.pool order by x.i),
         array_agg(x.budget order by x.i), array_agg(x.kbudget order by x.i), array_agg(x.period order by x.i),
         array_agg(x.ebudget order by x.i), array_agg(x.eperiod order by x.i), array_agg(x.ename order by x.i),
         array_agg(kiln_private.uuid_v7() order by x.i)
    into c_err, c_msg, c_pool, c_budget, c_kbudget, c_period, c_ebudget, c_eperiod, c_ename, c_id
    from (
      select s.i,
             case
               when p_amounts[s.i] is null or p_amounts[s.i] < 0 then '22023'
               when acc.id is null then 'KN001'
               when acc.tier = 'blocked' then 'KQ001'
               when p_workspace_ids[s.i] is not null and (ws.id is null or ws.plan_status <> 'active') then 'KP001'
               when p_workspace_ids[s.i] is not null and mem.account_id is null then 'KP001'
             end as err,
             case
               when p_amounts[s.i] is null or p_amounts[s.i] < 0 then 'reservation must be a non-negative amount'
               when acc.id is null then 'account not found'
               when acc.tier = 'blocked' then 'this account cannot start generations'
               when p_workspace_ids[s.i] is not null and (ws.id is null or ws.plan_status <> 'active') then 'the workspace''s Team plan is not active'
               when p_workspace_ids[s.i] is not null and mem.account_id is null then 'the key''s owner is no longer a member of the workspace'
             end as msg,
             case when p_workspace_ids[s.i] is null then acc.id else ws.id end as pool,
             case when p_workspace_ids[s.i] is null then acc.budget_micros else ws.plan_budget_micros end as budget,
             k.budget_micros as kbudget,
             eb.budget_micros as ebudget,
             kiln_private.end_user_period(eb.period, now()) as eperiod,
             eb.period as ename,
             kiln_private.period_start(case when p_workspace_ids[s.i] is null then acc.period_anchor else ws.plan_period_anchor end, now()) as period
      from generate_subscripts(p_account_ids, 1) as s(i)
      left join kiln_private.accounts acc on acc.id = p_account_ids[s.i]
      left join kiln_private.workspaces ws on ws.id = p_workspace_ids[s.i]
      left join kiln_private.workspace_members mem
        on mem.workspace_id = p_workspace_ids[s.i] and mem.account_id = p_account_ids[s.i] and mem.left_at is null
      left join kiln_private.api_keys k on k.id = p_key_ids[s.i]
      left join kiln_private.end_user_budgets eb
        on eb.pool_id = coalesce(p_workspace_ids[s.i], p_account_ids[s.i]) and eb.end_user = p_end_users[s.i]
    ) x;

  -- 2. One check-and-debit per pool for the set's total, then one per key budget, then one per
  --    end user's cap: the same transaction, so a request holds all or (below) none. Always in
  --    that order (pools, keys, end users), each in key order: concurrent callers cannot deadlock.
  select array_agg(t.pool order by t.pool), array_agg(t.period order by t.pool), array_agg(t.total order by t.pool),
         array_agg(t.budget order by t.pool)
    into v_pools, v_periods, v_totals, v_budgets
    from (select c_pool[s.i] as pool, min(c_period[s.i]) as period, sum(p_amounts[s.i])::bigint as total, min(c_budget[s.i]) as budget
          from generate_subscripts(p_account_ids, 1) as s(i) where c_err[s.i] is null group by 1) t;
  v_admitted := case when v_pools is null then '{}' else kiln_private.debit_pools(v_pools, v_periods, v_totals, v_budgets) end;
  select array_agg(t.k order by t.k), array_agg(t.period order by t.k), array_agg(t.total order by t.k),
         array_agg(t.budget order by t.k)
    into v_pools, v_periods, v_totals, v_budgets
    from (select p_key_ids[s.i] as k, min(c_period[s.i]) as period, sum(p_amounts[s.i])::bigint as total, min(c_kbudget[s.i]) as budget
          from generate_subscripts(p_account_ids, 1) as s(i) where c_err[s.i] is null and c_kbudget[s.i] is not null group by 1) t;
  if v_pools is not null then
    v_kadmitted := kiln_private.debit_key_pools(v_pools, v_periods, v_totals, v_budgets);
  end if;
  select array_agg(t.pool order by t.pool, t.eu), array_agg(t.eu order by t.pool, t.eu), array_agg(t.period order by t.pool, t.eu),
         array_agg(t.total order by t.pool, t.eu), array_agg(t.budget order by t.pool, t.eu)
    into v_pools, v_eus, v_periods, v_totals, v_budgets
    from (select c_pool[s.i] as pool, p_end_users[s.i] as eu, min(c_eperiod[s.i]) as period, sum(p_amounts[s.i])::bigint as total,
                 min(c_ebudget[s.i]) as budget
          from generate_subscripts(p_account_ids, 1) as s(i) where c_err[s.i] is null and c_ebudget[s.i] is not null group by 1, 2) t;
  if v_pools is not null then
    v_eadmitted := kiln_private.debit_end_user_pools(v_pools, v_eus, v_periods, v_totals, v_budgets);
  end if;

  -- 3. A request whose pool, key budget or end user's cap could not take the set's total gives
  --    back what the others debited for it, then is decided on its own, in arrival order. Row locks are already
  --    held by this transaction, so nobody sees the amounts in between.
  for v_i in
    select s.i from generate_subscripts(p_account_ids, 1) as s(i)
    where c_err[s.i] is null
      and (not (c_pool[s.i] = any (v_admitted)) or (c_kbudget[s.i] is not null and not (p_key_ids[s.i] = any (v_kadmitted)))
           or (c_ebudget[s.i] is not null and not (c_pool[s.i]::text || ':' || p_end_users[s.i] = any (v_eadmitted))))
    order by s.i
  loop
    if c_pool[v_i] = any (v_admitted) then
      update kiln_private.budget_periods set held_micros = held_micros - p_amounts[v_i]
        where pool_id = c_pool[v_i] and period_start = c_period[v_i];
    end if;
    if c_kbudget[v_i] is not null and p_key_ids[v_i] = any (v_kadmitted) then
      update kiln_private.key_budget_periods set held_micros = held_micros - p_amounts[v_i]
        where key_id = p_key_ids[v_i] and period_start = c_period[v_i];
    end if;
    if c_ebudget[v_i] is not null and c_pool[v_i]::text || ':' || p_end_users[v_i] = any (v_eadmitted) then
      update kiln_private.end_user_budget_periods set held_micros = held_micros - p_amounts[v_i]
        where pool_id = c_pool[v_i] and end_user = p_end_users[v_i] and period_start = c_eperiod[v_i];
    end if;
  end loop;
  for v_i in
    select s.i from generate_subscripts(p_account_ids, 1) as s(i)
    where c_err[s.i] is null
      and (not (c_pool[s.i] = any (v_admitted)) or (c_kbudget[s.i] is not null and not (p_key_ids[s.i] = any (v_kadmitted)))
           or (c_ebudget[s.i] is not null and not (c_pool[s.i]::text || ':' || p_end_users[s.i] = any (v_eadmitted))))
    order by c_pool[s.i], s.i
  loop
    if cardinality(kiln_private.debit_pools(array[c_pool[v_i]], array[c_period[v_i]], array[p_amounts[v_i]], array[c_budget[v_i]])) = 0 then
      c_err[v_i] := 'KQ001';
      c_msg[v_i] := 'the budget for this period is exhausted';
    elsif c_kbudget[v_i] is not null
          and cardinality(kiln_private.debit_key_pools(array[p_key_ids[v_i]], array[c_period[v_i]], array[p_amounts[v_i]], array[c_kbudget[v_i]])) = 0 then
      update kiln_private.budget_periods set held_micros = held_micros - p_amounts[v_i]
        where pool_id = c_pool[v_i] and period_start = c_period[v_i];
      c_err[v_i] := 'KQ001';
      c_msg[v_i] := 'this key''s budget for this period is exhausted';
    elsif c_ebudget[v_i] is not null
          and cardinality(kiln_private.debit_end_user_pools(array[c_pool[v_i]], array[p_end_users[v_i]], array[c_eperiod[v_i]],
                                                            array[p_amounts[v_i]], array[c_ebudget[v_i]])) = 0 then
      update kiln_private.budget_periods set held_micros = held_micros - p_amounts[v_i]
        where pool_id = c_pool[v_i] and period_start = c_period[v_i];
      if c_kbudget[v_i] is not null then
        update kiln_private.key_budget_periods set held_micros = held_micros - p_amounts[v_i]
          where key_id = p_key_ids[v_i] and period_start = c_period[v_i];
      end if;
      c_err[v_i] := 'KQ001';
      c_msg[v_i] := format('end user "%s"''s budget for this %s is exhausted', p_end_users[v_i], c_ename[v_i]);
    end if;
  end loop;

  -- 4. The ledger: one reserved charge per request that got its reservation, with its batch and
  --    metadata when the caller gives them (p_batch_ids, p_metadata: no update after the insert).
  insert into kiln_private.charges
    (id, account_id, workspace_id, pool_id, period_start, key_id, model_id, origin, reserved_micros,
     generation_id, workflow_run_id, node_id, key_pool, end_user, end_user_period, batch_id, metadata)
  select c_id[s.i], p_account_ids[s.i], p_workspace_ids[s.i], c_pool[s.i], c_period[s.i], p_key_ids[s.i], p_model_ids[s.i],
         p_origins[s.i], p_amounts[s.i], p_generation_ids[s.i], p_run_ids[s.i], p_node_ids[s.i], c_kbudget[s.i] is not null,
         p_end_users[s.i], c_eperiod[s.i], p_batch_ids[s.i], p_metadata[s.i]
  from generate_subscripts(p_account_ids, 1) as s(i)
  where c_err[s.i] is null;

  return query
    select s.i::int, case when c_err[s.i] is null then c_id[s.i] end, c_err[s.i], c_msg[s.i]
    from generate_subscripts(p_account_ids, 1) as s(i)
    order by s.i;
end;
$function$;
comment on function kiln_private.reserve_budgets(uuid[],uuid[],uuid[],text[],text[],bigint[],uuid[],uuid[],text[],text[],uuid[],jsonb[]) is 'Reserves the worst-case cost of each request on its personal pool or, for workspace-bound calls, its Team pool, on its key''s own budget when the key has one and on its end user''s cap (p_end_users; kiln_private.end_user_budgets) when it has one, in the same step, and writes its ledger row (with its end_user, and end_user_period when a cap held it; its batch_id and metadata from the optional p_batch_ids and p_metadata): one check-and-debit per pool, per key and per end user for the set''s total, request by request in arrival order where any cannot take it; a refusal gives back every other debit. Each row carries the charge id or the request''s own refusal: 22023 (bad amount), KN001 (no account), KQ001 (blocked tier, budget, key budget or end user''s cap exhausted), KP001 (plan not active, caller left the workspace).';
