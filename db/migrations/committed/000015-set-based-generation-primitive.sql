--! Previous: sha1:ec57c440cf0c5e20a4c04776d0db92adc4dcd0e3
--! Hash: sha1:220c0ae9045d50cdc2654c54ea41822835484633
--! Message: set-based generation primitive

--! split: 1-current.sql
-- The set-based functions are the primitive; single-request forms are batches of one, so each
-- rule is written once (as graphile-worker's add_job is a call of add_jobs):
--   kiln_private.debit_pools       the one atomic check-and-debit of budget pools;
--   kiln_private.reserve_budgets   the reservation rules (account, tier, Team plan, membership,
--                                  budget) and the ledger rows — kiln.reserve_budget is a batch of one;
--   kiln_private.insert_generations the generation rules (type, model, catalog price version) on top
--                                  of reserve_budgets, the rows and the jobs — kiln.create_generations,
--                                  kiln.create_generation and kiln.start_generations call it.
-- Jobs are queued through graphile-worker's public API (graphile_worker.add_jobs, via
-- kiln_private.enqueue_generations); the direct writes into its private tables go.

--------------------------------------------------------------------------------
-- Budgets.

create or replace function kiln_private.debit_pools(p_pools uuid[], p_periods timestamptz[], p_amounts bigint[], p_budgets bigint[])
  returns uuid[]
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  -- One atomic check-and-debit per pool period row, pools locked in id order (as everywhere
  -- budgets are locked, so concurrent callers cannot deadlock): settled + held never exceeds
  -- the budget (null = unlimited). Returns the pools debited.
  with debited as (
    insert into kiln_private.budget_periods as b (pool_id, period_start, held_micros)
      select u.pool, u.period, u.amount
      from unnest(p_pools, p_periods, p_amounts, p_budgets) as u(pool, period, amount, budget)
      where u.budget is null or u.amount <= u.budget
      order by u.pool
    on conflict (pool_id, period_start) do update
      set held_micros = b.held_micros + excluded.held_micros
      where p_budgets[array_position(p_pools, b.pool_id)] is null
         or b.held_micros + b.settled_micros + excluded.held_micros <= p_budgets[array_position(p_pools, b.pool_id)]
    returning b.pool_id)
  select coalesce(array_agg(pool_id), '{}') from debited;
$$;
comment on function kiln_private.debit_pools(uuid[], timestamptz[], bigint[], bigint[]) is
  'Adds each amount to its pool''s held total for the period when settled + held stays within the pool''s budget (null = unlimited), pools in id order; returns the pools debited.';

create or replace function kiln_private.reserve_budgets(
  p_account_ids uuid[],
  p_workspace_ids uuid[],
  p_key_ids uuid[],
  p_model_ids text[],
  p_origins text[],
  p_amounts bigint[],
  p_generation_ids uuid[],
  p_run_ids uuid[],
  p_node_ids text[]
) returns table (ord int, charge_id uuid, error_code text, error_message text)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_n int := coalesce(cardinality(p_account_ids), 0);
  c_err text[];
  c_msg text[];
  c_pool uuid[];
  c_budget bigint[];
  c_period timestamptz[];
  c_id uuid[];
  v_pools uuid[];
  v_periods timestamptz[];
  v_totals bigint[];
  v_budgets bigint[];
  v_admitted uuid[];
  v_late int[] := '{}';
  v_i int;
begin
  if v_n = 0 then
    return;
  end if;
  -- 1. The reservation rules, for the whole set; each request gets its pool, budget and period.
  select array_agg(x.err order by x.i), array_agg(x.msg order by x.i), array_agg(x.pool order by x.i),
         array_agg(x.budget order by x.i), array_agg(x.period order by x.i), array_agg(gen_random_uuid() order by x.i)
    into c_err, c_msg, c_pool, c_budget, c_period, c_id
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
             kiln_private.period_start(case when p_workspace_ids[s.i] is null then acc.period_anchor else ws.plan_period_anchor end, now()) as period
      from generate_subscripts(p_account_ids, 1) as s(i)
      left join kiln_private.accounts acc on acc.id = p_account_ids[s.i]
      left join kiln_private.workspaces ws on ws.id = p_workspace_ids[s.i]
      left join kiln_private.workspace_members mem
        on mem.workspace_id = p_workspace_ids[s.i] and mem.account_id = p_account_ids[s.i] and mem.left_at is null
    ) x;

  -- 2. One check-and-debit per pool for the set's total.
  select array_agg(t.pool order by t.pool), array_agg(t.period order by t.pool), array_agg(t.total order by t.pool),
         array_agg(t.budget order by t.pool)
    into v_pools, v_periods, v_totals, v_budgets
    from (select c_pool[s.i] as pool, min(c_period[s.i]) as period, sum(p_amounts[s.i])::bigint as total, min(c_budget[s.i]) as budget
          from generate_subscripts(p_account_ids, 1) as s(i) where c_err[s.i] is null group by 1) t;
  v_admitted := case when v_pools is null then '{}' else kiln_private.debit_pools(v_pools, v_periods, v_totals, v_budgets) end;

  -- 3. A pool that could not take the total decides request by request, in arrival order.
  for v_i in
    select s.i from generate_subscripts(p_account_ids, 1) as s(i)
    where c_err[s.i] is null and not (c_pool[s.i] = any (v_admitted))
    order by c_pool[s.i], s.i
  loop
    if cardinality(kiln_private.debit_pools(array[c_pool[v_i]], array[c_period[v_i]], array[p_amounts[v_i]], array[c_budget[v_i]])) = 0 then
      c_err[v_i] := 'KQ001';
      c_msg[v_i] := 'the budget for this period is exhausted';
    end if;
  end loop;

  -- 4. The ledger: one reserved charge per request that got its reservation.
  insert into kiln_private.charges
    (id, account_id, workspace_id, pool_id, period_start, key_id, model_id, origin, reserved_micros,
     generation_id, workflow_run_id, node_id)
  select c_id[s.i], p_account_ids[s.i], p_workspace_ids[s.i], c_pool[s.i], c_period[s.i], p_key_ids[s.i], p_model_ids[s.i],
         p_origins[s.i], p_amounts[s.i], p_generation_ids[s.i], p_run_ids[s.i], p_node_ids[s.i]
  from generate_subscripts(p_account_ids, 1) as s(i)
  where c_err[s.i] is null;

  return query
    select s.i::int, case when c_err[s.i] is null then c_id[s.i] end, c_err[s.i], c_msg[s.i]
    from generate_subscripts(p_account_ids, 1) as s(i)
    order by s.i;
end;
$$;
comment on function kiln_private.reserve_budgets(uuid[], uuid[], uuid[], text[], text[], bigint[], uuid[], uuid[], text[]) is
  'Reserves the worst-case cost of each request on its personal pool or, for workspace-bound calls, its Team pool, and writes its ledger row: one check-and-debit per pool for the set''s total, request by request in arrival order for a pool that cannot take it. Each row carries the charge id or the request''s own refusal: 22023 (bad amount), KN001 (no account), KQ001 (blocked tier, budget exhausted), KP001 (plan not active, caller left the workspace).';
alter function kiln_private.reserve_budgets(uuid[], uuid[], uuid[], text[], text[], bigint[], uuid[], uuid[], text[]) set plan_cache_mode = force_generic_plan;

create or replace function kiln.reserve_budget(
  p_account_id uuid,
  p_workspace_id uuid,
  p_key_id uuid,
  p_model_id text,
  p_origin text,
  p_amount_micros bigint,
  p_generation_id uuid default null,
  p_workflow_run_id uuid default null,
  p_node_id text default null
) returns kiln_private.charges
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_r record;
  v_charge kiln_private.charges;
begin
  select * into v_r from kiln_private.reserve_budgets(array[p_account_id], array[p_workspace_id], array[p_key_id], array[p_model_id],
    array[p_origin], array[p_amount_micros], array[p_generation_id], array[p_workflow_run_id], array[p_node_id]);
  if v_r.error_code is not null then
    raise exception '%', v_r.error_message using errcode = v_r.error_code;
  end if;
  select * into v_charge from kiln_private.charges where id = v_r.charge_id;
  return v_charge;
end;
$$;
comment on function kiln.reserve_budget(uuid, uuid, uuid, text, text, bigint, uuid, uuid, text) is
  'kiln_private.reserve_budgets for one request: reserves the worst-case cost on the personal pool or, for workspace-bound calls, the Team pool. Raises KQ001 (blocked tier or budget exhausted), KP001 (plan not active, or caller left the workspace), KN001, 22023.';

--------------------------------------------------------------------------------
-- Generations.

create or replace function kiln_private.insert_generations(
  p_account_ids uuid[],
  p_key_ids uuid[],
  p_workspace_ids uuid[],
  p_origins text[],
  p_types text[],
  p_model_ids text[],
  p_model_versions bigint[],
  p_requests jsonb[],
  p_reserves bigint[],
  p_max_attempts int
) returns table (ord int, id uuid, error_code text, error_message text)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  c_err text[];
  c_msg text[];
  c_gid uuid[];
  c_charge uuid[];
  v_idx int[];
  r_charge uuid[];
  r_err text[];
  r_msg text[];
  v_created uuid[];
  v_n int;
begin
  if coalesce(cardinality(p_account_ids), 0) = 0 then
    return;
  end if;
  -- 1. The generation rules, for the whole set.
  select array_agg(x.err order by x.i), array_agg(x.msg order by x.i), array_agg(gen_random_uuid() order by x.i)
    into c_err, c_msg, c_gid
    from (
      select s.i,
             case
               when p_types[s.i] is null or p_types[s.i] not in ('image', 'code') then 'KI001'
               when m.id is null then 'KI001'
               -- The caller priced the reservation from a cached catalog entry: refuse a stale one.
               when p_model_versions[s.i] is not null
                    and p_model_versions[s.i] <> (extract(epoch from m.updated_at) * 1000000)::bigint then 'KS001'
               when (p_types[s.i] = 'image') <> (m.category = 'image') then 'KI001'
             end as err,
             case
               when p_types[s.i] is null or p_types[s.i] not in ('image', 'code') then 'type must be image or code'
               when m.id is null then format('model "%s" is not in the catalog', left(p_model_ids[s.i], 200))
               when p_model_versions[s.i] is not null
                    and p_model_versions[s.i] <> (extract(epoch from m.updated_at) * 1000000)::bigint then 'the catalog entry changed; price again'
               when (p_types[s.i] = 'image') <> (m.category = 'image') then format('model "%s" cannot produce %s output', m.id, p_types[s.i])
             end as msg
      from generate_subscripts(p_account_ids, 1) as s(i)
      left join kiln_private.models m on m.id = p_model_ids[s.i] and m.enabled
    ) x;
  c_charge := array_fill(null::uuid, array[cardinality(p_account_ids)]);

  -- 2. The reservations of the requests that passed (reserve_budgets' rules, its ledger rows).
  select array_agg(s.i order by s.i) into v_idx from generate_subscripts(p_account_ids, 1) as s(i) where c_err[s.i] is null;
  if v_idx is not null then
    select array_agg(r.charge_id order by r.ord), array_agg(r.error_code order by r.ord), array_agg(r.error_message order by r.ord)
      into r_charge, r_err, r_msg
      from kiln_private.reserve_budgets(
        array(select p_account_ids[i] from unnest(v_idx) as u(i)),
        array(select p_workspace_ids[i] from unnest(v_idx) as u(i)),
        array(select p_key_ids[i] from unnest(v_idx) as u(i)),
        array(select p_model_ids[i] from unnest(v_idx) as u(i)),
        array(select p_origins[i] from unnest(v_idx) as u(i)),
        array(select p_reserves[i] from unnest(v_idx) as u(i)),
        array(select c_gid[i] from unnest(v_idx) as u(i)),
        array_fill(null::uuid, array[cardinality(v_idx)]),
        array_fill(null::text, array[cardinality(v_idx)])) r;
    for v_n in 1 .. cardinality(v_idx) loop
      c_charge[v_idx[v_n]] := r_charge[v_n];
      c_err[v_idx[v_n]] := r_err[v_n];
      c_msg[v_idx[v_n]] := r_msg[v_n];
    end loop;

    -- 3. The generations that got their reservation, and their jobs.
    with gens as (
      insert into kiln_private.generations
        (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, charge_id, max_attempts)
      select c_gid[s.i], p_account_ids[s.i], p_key_ids[s.i], p_workspace_ids[s.i], p_origins[s.i], p_model_ids[s.i],
             p_types[s.i], p_requests[s.i], p_reserves[s.i], c_charge[s.i], p_max_attempts
      from generate_subscripts(p_account_ids, 1) as s(i)
      where c_charge[s.i] is not null
      returning id, created_at
    )
    select array_agg(g.id order by g.created_at) into v_created from gens g;
    perform kiln_private.enqueue_generations(v_created, p_max_attempts);
  end if;

  return query
    select s.i::int, case when c_charge[s.i] is not null then c_gid[s.i] end, c_err[s.i], c_msg[s.i]
    from generate_subscripts(p_account_ids, 1) as s(i)
    order by s.i;
end;
$$;
comment on function kiln_private.insert_generations(uuid[], uuid[], uuid[], text[], text[], text[], bigint[], jsonb[], bigint[], int) is
  'The generation primitive: checks each request''s type and model (KI001) and its catalog price version (KS001), reserves the worst case (kiln_private.reserve_budgets), inserts the generations and queues their generation__run jobs, for a whole set at once. Each row carries the new id or the request''s own refusal; the others still go in.';
alter function kiln_private.insert_generations(uuid[], uuid[], uuid[], text[], text[], text[], bigint[], jsonb[], bigint[], int) set plan_cache_mode = force_generic_plan;

create or replace function kiln.create_generations(
  p_account_ids uuid[],
  p_key_ids uuid[],
  p_workspace_ids uuid[],
  p_origins text[],
  p_types text[],
  p_model_ids text[],
  p_model_versions bigint[],
  p_requests jsonb[],
  p_reserves bigint[],
  p_max_attempts int[]
) returns table (ord int, id uuid, error_code text, error_message text)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if cardinality(p_account_ids) > 50 then
    raise exception 'at most 50 generations per call' using errcode = '22023';
  end if;
  -- One attempts limit per call (every caller passes the same); the largest is kept.
  return query select * from kiln_private.insert_generations(p_account_ids, p_key_ids, p_workspace_ids, p_origins, p_types,
    p_model_ids, p_model_versions, p_requests, p_reserves, (select max(a) from unnest(p_max_attempts) a));
end;
$$;
comment on function kiln.create_generations(uuid[], uuid[], uuid[], text[], text[], text[], bigint[], jsonb[], bigint[], int[]) is
  'Starts up to 50 generations of already-authorized callers in one transaction (kiln_private.insert_generations). Each row reports its id, or the SQLSTATE and message of its own business error; the others still commit.';

create or replace function kiln.create_generation(
  p_account_id uuid,
  p_key_id uuid,
  p_workspace_id uuid,
  p_origin text,
  p_type text,
  p_model_id text,
  p_model_version bigint,
  p_request jsonb,
  p_reserve_micros bigint,
  p_max_attempts int
) returns uuid
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_r record;
begin
  select * into v_r from kiln_private.insert_generations(array[p_account_id], array[p_key_id], array[p_workspace_id], array[p_origin],
    array[p_type], array[p_model_id], array[p_model_version], array[p_request], array[p_reserve_micros], p_max_attempts);
  if v_r.error_code is not null then
    raise exception '%', v_r.error_message using errcode = v_r.error_code;
  end if;
  return v_r.id;
end;
$$;
comment on function kiln.create_generation(uuid, uuid, uuid, text, text, text, bigint, jsonb, bigint, int) is
  'kiln_private.insert_generations for one request: checks the model, reserves the worst-case cost, inserts the generation and queues generation__run. Raises KI001, KQ001/KP001, KS001 (stale catalog price; internal).';

create or replace function kiln.start_generations(
  p_key_hashes bytea[],
  p_origin text,
  p_types text[],
  p_model_ids text[],
  p_model_versions bigint[],
  p_requests jsonb[],
  p_reserves bigint[],
  p_max_attempts int
) returns table (ord int, status text, key_id uuid, account_id uuid, workspace_id uuid, retry_after int,
                 id uuid, error_code text, error_message text)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_n int := coalesce(cardinality(p_key_hashes), 0);
  a_status text[];
  a_key uuid[];
  a_account uuid[];
  a_workspace uuid[];
  a_retry int[];
  v_idx int[];
begin
  if v_n = 0 then
    return;
  end if;
  if v_n > 50 then
    raise exception 'at most 50 generations per call' using errcode = '22023';
  end if;
  -- 1. Key, write scope and the key's own rpm (generation starts have no endpoint bucket).
  select array_agg(r.status order by r.ord), array_agg(r.key_id order by r.ord), array_agg(r.account_id order by r.ord),
         array_agg(r.workspace_id order by r.ord), array_agg(r.retry_after order by r.ord)
    into a_status, a_key, a_account, a_workspace, a_retry
    from kiln.authorize_requests(p_key_hashes, array_fill('write'::text, array[v_n]), array_fill(null::text, array[v_n]),
                                 array_fill(null::int, array[v_n]), array_fill(false, array[v_n])) r;
  -- 2. The admitted requests, through the generation primitive.
  select array_agg(s.i order by s.i) into v_idx from generate_subscripts(p_key_hashes, 1) as s(i) where a_status[s.i] = 'ok';
  return query
    with g as (
      select * from kiln_private.insert_generations(
        array(select a_account[i] from unnest(v_idx) as u(i)),
        array(select a_key[i] from unnest(v_idx) as u(i)),
        array(select a_workspace[i] from unnest(v_idx) as u(i)),
        array_fill(p_origin, array[coalesce(cardinality(v_idx), 0)]),
        array(select p_types[i] from unnest(v_idx) as u(i)),
        array(select p_model_ids[i] from unnest(v_idx) as u(i)),
        array(select p_model_versions[i] from unnest(v_idx) as u(i)),
        array(select p_requests[i] from unnest(v_idx) as u(i)),
        array(select p_reserves[i] from unnest(v_idx) as u(i)),
        p_max_attempts)
    )
    select s.i::int, a_status[s.i], a_key[s.i], a_account[s.i], a_workspace[s.i], a_retry[s.i], g.id, g.error_code, g.error_message
    from generate_subscripts(p_key_hashes, 1) as s(i)
    left join g on v_idx[g.ord] = s.i
    order by s.i;
end;
$$;
comment on function kiln.start_generations(bytea[], text, text[], text[], bigint[], jsonb[], bigint[], int) is
  'POST /generations for up to 50 requests in one transaction: authenticates each key (write scope, the key''s own rpm), then starts the admitted ones through kiln_private.insert_generations. Each row carries its authorization status and either the new id or its own business error (KI001, KQ001, KP001, KS001); the others still commit.';

-- The single-request body the batched functions used to restate, and the direct job writes.
drop function kiln_private.insert_generation(uuid, uuid, uuid, text, text, text, bigint, jsonb, bigint, int, boolean);
drop function kiln_private.enqueue_new_job(text, json, text, int, boolean);
drop function if exists kiln_private.enqueue_new_job(text, json, text, int);

-- Replacing a function drops its SET clauses: pin the generic plans again (see migration 000009).
alter function kiln.start_generations(bytea[], text, text[], text[], bigint[], jsonb[], bigint[], int) set plan_cache_mode = force_generic_plan;
alter function kiln.create_generations(uuid[], uuid[], uuid[], text[], text[], text[], bigint[], jsonb[], bigint[], int[]) set plan_cache_mode = force_generic_plan;
