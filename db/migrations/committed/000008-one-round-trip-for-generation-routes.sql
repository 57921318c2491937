--! Previous: sha1:1e02948ad0fb7c829a2a42c705cc5f55276c1d61
--! Hash: sha1:ab5114cc66556fe9323bace0b4442bf48d06dded
--! Message: one round trip for generation routes

--! split: 1-current.sql
-- One round trip and one transaction per batch for the hot generation routes, as DESIGN.md's
-- Execution section describes: POST /generations validates the key, scope and limits, reserves
-- the budget, inserts the generation and queues its job in one call (kiln.start_generations);
-- GET /generations/{id} reads the generation in the same call that authorizes the key.
--
-- Both are set-based: a batch of N requests costs a handful of statements, not a handful per
-- request (every statement inside a function pays executor start-up, whatever its row count).
--
-- Idempotent (graphile-migrate "current"): drop what this file creates, then create it again.

drop function if exists kiln.start_generations(bytea[], text, text[], text[], bigint[], jsonb[], bigint[], int);

create function kiln.start_generations(
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
  -- Per request (index = ord): the authorization.
  a_status text[];
  a_key uuid[];
  a_account uuid[];
  a_workspace uuid[];
  a_retry int[];
  -- Per request: the checked item (null error = may be created).
  c_err text[];
  c_msg text[];
  c_pool uuid[];
  c_budget bigint[];
  c_period timestamptz[];
  c_gid uuid[];
  -- Per pool of the batch: its budget (null = unlimited).
  v_pools uuid[];
  v_pool_budgets bigint[];
  v_admitted uuid[];
  v_task int;
  v_created int := 0;
  v_i int;
begin
  if v_n = 0 then
    return;
  end if;
  if v_n > 50 then
    raise exception 'at most 50 generations per call' using errcode = '22023';
  end if;
  if p_origin is null or p_origin not in ('api', 'mcp', 'app', 'workflow') then
    raise exception 'unknown origin' using errcode = '22023';
  end if;

  -- 1. Key, write scope and the key's own rpm (generation starts have no endpoint bucket).
  select array_agg(r.status order by r.ord), array_agg(r.key_id order by r.ord), array_agg(r.account_id order by r.ord),
         array_agg(r.workspace_id order by r.ord), array_agg(r.retry_after order by r.ord)
    into a_status, a_key, a_account, a_workspace, a_retry
    from kiln.authorize_requests(p_key_hashes, array_fill('write'::text, array[v_n]), array_fill(null::text, array[v_n]),
                                 array_fill(null::int, array[v_n]), array_fill(false, array[v_n])) r;

  -- 2. Every check of kiln_private.insert_generation and kiln.reserve_budget, for the whole batch.
  select array_agg(x.err order by x.i), array_agg(x.msg order by x.i), array_agg(x.pool order by x.i),
         array_agg(x.budget order by x.i), array_agg(x.period order by x.i), array_agg(x.gid order by x.i)
    into c_err, c_msg, c_pool, c_budget, c_period, c_gid
    from (
      select s.i,
             case
               when a_status[s.i] <> 'ok' then 'auth'
               when p_types[s.i] is null or p_types[s.i] not in ('image', 'code') then 'KI001'
               when m.id is null then 'KI001'
               when p_model_versions[s.i] is not null
                    and p_model_versions[s.i] <> (extract(epoch from m.updated_at) * 1000000)::bigint then 'KS001'
               when (p_types[s.i] = 'image') <> (m.category = 'image') then 'KI001'
               when p_reserves[s.i] is null or p_reserves[s.i] < 0 then '22023'
               when acc.tier = 'blocked' then 'KQ001'
               when a_workspace[s.i] is not null and (ws.id is null or ws.plan_status <> 'active') then 'KP001'
               when a_workspace[s.i] is not null and mem.account_id is null then 'KP001'
             end as err,
             case
               when a_status[s.i] <> 'ok' then null
               when p_types[s.i] is null or p_types[s.i] not in ('image', 'code') then 'type must be image or code'
               when m.id is null then format('model "%s" is not in the catalog', left(p_model_ids[s.i], 200))
               when p_model_versions[s.i] is not null
                    and p_model_versions[s.i] <> (extract(epoch from m.updated_at) * 1000000)::bigint then 'the catalog entry changed; price again'
               when (p_types[s.i] = 'image') <> (m.category = 'image') then format('model "%s" cannot produce %s output', m.id, p_types[s.i])
               when p_reserves[s.i] is null or p_reserves[s.i] < 0 then 'reservation must be a non-negative amount'
               when acc.tier = 'blocked' then 'this account cannot start generations'
               when a_workspace[s.i] is not null and (ws.id is null or ws.plan_status <> 'active') then 'the workspace''s Team plan is not active'
               when a_workspace[s.i] is not null and mem.account_id is null then 'the key''s owner is no longer a member of the workspace'
             end as msg,
             coalesce(ws.id, acc.id) as pool,
             case when a_workspace[s.i] is null then acc.budget_micros else ws.plan_budget_micros end as budget,
             kiln_private.period_start(case when a_workspace[s.i] is null then acc.period_anchor else ws.plan_period_anchor end, now()) as period,
             gen_random_uuid() as gid
      from generate_subscripts(p_key_hashes, 1) as s(i)
      left join kiln_private.accounts acc on acc.id = a_account[s.i]
      left join kiln_private.models m on m.id = p_model_ids[s.i] and m.enabled
      left join kiln_private.workspaces ws on ws.id = a_workspace[s.i]
      left join kiln_private.workspace_members mem
        on mem.workspace_id = a_workspace[s.i] and mem.account_id = a_account[s.i] and mem.left_at is null
    ) x;

  -- 3. One atomic check-and-debit per budget pool for the batch's total, pools locked in id
  --    order (as everywhere budgets are locked). A pool whose total does not fit is decided
  --    request by request below, in arrival order.
  select array_agg(distinct c_pool[s.i]) into v_pools
    from generate_subscripts(p_key_hashes, 1) as s(i) where c_err[s.i] is null;
  if v_pools is not null then
    select array_agg(c_budget[array_position(c_pool, p)] order by p) into v_pool_budgets from unnest(v_pools) as p;
    select array_agg(p order by p) into v_pools from unnest(v_pools) as p;
    with totals as (
      select c_pool[s.i] as pool, c_period[s.i] as period, sum(p_reserves[s.i]) as total
      from generate_subscripts(p_key_hashes, 1) as s(i)
      where c_err[s.i] is null
      group by 1, 2
    ), debited as (
      insert into kiln_private.budget_periods as b (pool_id, period_start, held_micros)
        select t.pool, t.period, t.total from totals t
        where v_pool_budgets[array_position(v_pools, t.pool)] is null
           or t.total <= v_pool_budgets[array_position(v_pools, t.pool)]
        order by t.pool
      on conflict (pool_id, period_start) do update
        set held_micros = b.held_micros + excluded.held_micros
        where v_pool_budgets[array_position(v_pools, b.pool_id)] is null
           or b.held_micros + b.settled_micros + excluded.held_micros <= v_pool_budgets[array_position(v_pools, b.pool_id)]
      returning b.pool_id)
    select array_agg(d.pool_id) into v_admitted from debited d;
  end if;
  v_admitted := coalesce(v_admitted, '{}');

  -- 4. The admitted requests: charge, generation and job rows, one statement per table.
  select t.id into v_task from graphile_worker._private_tasks t where t.identifier = 'generation__run';
  if v_task is null then
    insert into graphile_worker._private_tasks (identifier) values ('generation__run')
      on conflict (identifier) do nothing;
    select t.id into v_task from graphile_worker._private_tasks t where t.identifier = 'generation__run';
  end if;
  with items as (
    select s.i, c_gid[s.i] as gid, gen_random_uuid() as cid
    from generate_subscripts(p_key_hashes, 1) as s(i)
    where c_err[s.i] is null and c_pool[s.i] = any (v_admitted)
  ), charges as (
    insert into kiln_private.charges
      (id, account_id, workspace_id, pool_id, period_start, key_id, model_id, origin, reserved_micros, generation_id)
    select it.cid, a_account[it.i], a_workspace[it.i], c_pool[it.i], c_period[it.i], a_key[it.i], p_model_ids[it.i],
           p_origin, p_reserves[it.i], it.gid
    from items it
  ), generations as (
    insert into kiln_private.generations
      (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, charge_id, max_attempts)
    select it.gid, a_account[it.i], a_key[it.i], a_workspace[it.i], p_origin, p_model_ids[it.i], p_types[it.i],
           p_requests[it.i], p_reserves[it.i], it.cid, p_max_attempts
    from items it
  ), jobs as (
    -- What graphile_worker.add_job writes for a new job key (see kiln_private.enqueue_new_job).
    insert into graphile_worker._private_jobs (task_id, payload, max_attempts, key)
    select v_task, json_build_object('id', it.gid), p_max_attempts, it.gid::text
    from items it
  )
  select count(*) into v_created from items;

  -- 5. Pools that could not take the batch's total: request by request, in arrival order.
  for v_i in
    select s.i from generate_subscripts(p_key_hashes, 1) as s(i)
    where c_err[s.i] is null and not (c_pool[s.i] = any (v_admitted))
    order by c_pool[s.i], s.i
  loop
    begin
      c_gid[v_i] := kiln_private.insert_generation(a_account[v_i], a_key[v_i], a_workspace[v_i], p_origin, p_types[v_i],
        p_model_ids[v_i], p_model_versions[v_i], p_requests[v_i], p_reserves[v_i], p_max_attempts, false);
      v_created := v_created + 1;
    exception
      when sqlstate 'KI001' or sqlstate 'KQ001' or sqlstate 'KP001' or sqlstate 'KS001' or sqlstate 'KN001' then
        c_gid[v_i] := null;
        c_err[v_i] := sqlstate;
        c_msg[v_i] := sqlerrm;
    end;
  end loop;

  if v_created > 0 then
    perform pg_notify('jobs:insert', json_build_object('r', random(), 'count', v_created)::text);
  end if;

  return query
    select s.i::int, a_status[s.i], a_key[s.i], a_account[s.i], a_workspace[s.i], a_retry[s.i],
           case when c_err[s.i] is null then c_gid[s.i] end,
           case when c_err[s.i] <> 'auth' then c_err[s.i] end,
           case when c_err[s.i] <> 'auth' then c_msg[s.i] end
    from generate_subscripts(p_key_hashes, 1) as s(i)
    order by s.i;
end;
$$;
comment on function kiln.start_generations(bytea[], text, text[], text[], bigint[], jsonb[], bigint[], int) is
  'POST /generations for up to 50 requests in one transaction: authenticates each key (write scope, the key''s own rpm), then checks the model, reserves the worst-case cost, inserts the generation and queues generation__run. Each row carries its authorization status and either the new id or its own business error (KI001, KQ001, KP001, KS001); the others still commit. Pools that cannot take the batch''s total are decided request by request.';

drop function if exists kiln.poll_generations(bytea[], int, uuid[], text);

create function kiln.poll_generations(p_key_hashes bytea[], p_read_rpm int, p_ids uuid[], p_origin text)
  returns table (ord int, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[],
                 retry_after int, body json)
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select r.ord, r.status, r.key_id, r.account_id, r.workspace_id, r.tier, r.scopes, r.retry_after,
         case when r.status = 'ok' then (
           select json_build_object(
             'id', g.id,
             'status', g.status,
             'type', g.type,
             'result', case when g.status = 'completed' then g.result end,
             'error', case when g.status = 'failed' then g.error end,
             'cost_micros', g.cost_micros)
           from kiln_private.generations g
           where g.id = p_ids[r.ord] and g.account_id = r.account_id and g.origin = p_origin) end
  from kiln.authorize_requests(
         p_key_hashes,
         array_fill('read'::text, array[cardinality(p_key_hashes)]),
         array_fill('read'::text, array[cardinality(p_key_hashes)]),
         array_fill(p_read_rpm, array[cardinality(p_key_hashes)]),
         array_fill(false, array[cardinality(p_key_hashes)])) r;
$$;
comment on function kiln.poll_generations(bytea[], int, uuid[], text) is
  'GET /generations/{id} for a batch in one transaction: authorizes each key (read scope, the per-key read bucket at p_read_rpm and the key''s own rpm) and, when admitted, returns that generation of the key''s account created through p_origin (body null when there is none).';
