--! Previous: sha1:738a6439e6049f023031142aa23e7daf1c7e6fae
--! Hash: sha1:39162a9f4c7698349f24a307797c0db0a5db8968
--! Message: Reservations leave the daily rollup (open ones read through a partial index); time-ordered charge ids

--! split: 1-current.sql
-- A POST writes no rollup row, and the ledger's primary key grows at its right end.
--
-- 1. kiln_private.charge_days sums ended charges only (settled and released). The POST path
--    inserts a reservation, which no longer touches the rollup: an insert trigger fires only for
--    a row inserted already ended (WHEN, evaluated without calling the function), so a
--    reservation costs one small partial-index entry (charges_open_idx) instead of a statement
--    trigger, its transition table and an upsert. Open reservations — at most the jobs in
--    flight — are read at query time through charges_open_idx. A settle or release still rolls up
--    in its own transaction (statement trigger, one upsert per group), so the days stay exact.
-- 2. kiln.daily_spend keeps its columns: the rollup plus the open reservations.
-- 3. kiln.get_daily_usage: the same body, from the rollup plus the pool's open reservations.
-- 4. kiln_private.rebuild_charge_days(): the backfill as a function (migration, bench, repair).
-- 5. Charge ids are time-ordered (UUID version 7): a reservation's primary-key entry lands on the
--    index's rightmost pages, which stay cached, instead of a random page of a 10-million-row
--    index. Existing ids are kept. Charge ids are internal; generation ids stay random.
-- 6. generations_account_created_idx goes: no query reads it since the list's index
--    (generations_list_idx) leads with account_id, and every index on generations is written by
--    each POST and each status change.
--
-- Re-runnable (graphile-migrate "current").

-- ---------------------------------------------------------------- 5. time-ordered charge ids

create or replace function kiln_private.uuid_v7(p_at timestamptz default clock_timestamp())
  returns uuid
  language sql volatile parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  -- RFC 9562 version 7: 48 bits of Unix milliseconds, then gen_random_uuid()'s random bits with
  -- the version nibble turned from 4 into 7 (bits 52 and 53 set); the variant bits stay as they are.
  select encode(set_bit(set_bit(
           overlay(uuid_send(gen_random_uuid())
                   placing substring(int8send(floor(extract(epoch from p_at) * 1000)::bigint) from 3)
                   from 1 for 6),
           52, 1), 53, 1), 'hex')::uuid;
$$;
comment on function kiln_private.uuid_v7(timestamptz) is 'A version 7 UUID (RFC 9562) for the time p_at (now by default): ordered by time to the millisecond, random after that. Used for ledger ids, so the primary key is appended to at its right end. (Postgres 18''s uuidv7() does the same; this works on older servers too.)';

alter table kiln_private.charges alter column id set default kiln_private.uuid_v7();

create or replace function kiln_private.reserve_budgets(p_account_ids uuid[], p_workspace_ids uuid[], p_key_ids uuid[], p_model_ids text[], p_origins text[], p_amounts bigint[], p_generation_ids uuid[], p_run_ids uuid[], p_node_ids text[])
  returns table (ord integer, charge_id uuid, error_code text, error_message text)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
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
         array_agg(x.budget order by x.i), array_agg(x.period order by x.i), array_agg(kiln_private.uuid_v7() order by x.i)
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

drop index if exists kiln_private.generations_account_created_idx;

-- ---------------------------------------------------------------- 1. the rollup: ended charges

-- Open reservations, read at query time by pool and day. Small: a row leaves it when its charge
-- settles or is released (an update never re-enters a partial index whose predicate it fails).
create index if not exists charges_open_idx on kiln_private.charges (pool_id, created_at) where status = 'reserved';

drop view if exists kiln.daily_spend;
drop trigger if exists tg_charges__roll_up_insert on kiln_private.charges;
drop trigger if exists tg_charges__roll_up_insert_ended on kiln_private.charges;
alter table kiln_private.charge_days drop column if exists open_reservations, drop column if exists held_micros;
comment on table kiln_private.charge_days is 'Ended charges of kiln_private.charges (settled or released) summed per pool, period, UTC day of creation, account, workspace, key, model and origin; kept by the tg_charges__roll_up* triggers in the transaction that ends (or changes) a charge. Open reservations are not in it: readers add them from kiln_private.charges through charges_open_idx. charges = settled_charges + released_charges; spend_micros = settled amounts.';

create or replace function kiln_private.roll_up_charges(p_added kiln_private.charges[], p_removed kiln_private.charges[])
  returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  -- Each ended charge row contributes its counts to its group (an open reservation contributes
  -- nothing); a change is its new row minus its old one.
  with delta as (
    select c.pool_id, c.period_start, (c.created_at at time zone 'UTC')::date as day, c.account_id, c.workspace_id,
           c.key_id, c.model_id, c.origin, c.sign,
           (c.status = 'settled')::int as settled, (c.status = 'released')::int as released,
           coalesce(c.settled_micros, 0) as spend
    from (select a.*, 1 as sign from unnest(p_added) a
          union all
          select r.*, -1 from unnest(p_removed) r) c
    where c.status <> 'reserved'
  ), summed as (
    select pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
           sum(sign)::bigint as charges, sum(sign * settled)::bigint as settled, sum(sign * released)::bigint as released,
           sum(sign * spend)::bigint as spend
    from delta
    group by pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin
  )
  insert into kiln_private.charge_days as t
    (pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
     charges, settled_charges, released_charges, spend_micros)
  select pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
         charges, settled, released, spend
  from summed
  where charges <> 0 or settled <> 0 or released <> 0 or spend <> 0
  -- Rows locked in key order, as budgets are: concurrent writers cannot deadlock here.
  order by pool_id, day, account_id, model_id, origin, key_id, period_start
  on conflict (pool_id, day, account_id, model_id, origin, key_id, period_start) do update
    set charges = t.charges + excluded.charges,
        settled_charges = t.settled_charges + excluded.settled_charges,
        released_charges = t.released_charges + excluded.released_charges,
        spend_micros = t.spend_micros + excluded.spend_micros;
$$;
comment on function kiln_private.roll_up_charges(kiln_private.charges[], kiln_private.charges[]) is 'Adds the contribution of the ended (settled or released) rows of p_added to kiln_private.charge_days and subtracts that of p_removed (the old versions of changed rows), one upsert per group, groups in key order. Open reservations contribute nothing.';

create or replace function kiln_private.tg_charges__roll_up() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_level = 'ROW' then
    -- A row inserted already ended (not the POST path, which inserts reservations).
    perform kiln_private.roll_up_charges(array[new], '{}');
  elsif tg_op = 'UPDATE' then
    -- Statement-level with transition tables: a batch of settlements is one upsert per group.
    perform kiln_private.roll_up_charges(array(select n::kiln_private.charges from new_rows n), array(select o::kiln_private.charges from old_rows o));
  elsif tg_op = 'DELETE' then
    perform kiln_private.roll_up_charges('{}', array(select o::kiln_private.charges from old_rows o));
  end if;
  return null;
end;
$$;
comment on function kiln_private.tg_charges__roll_up() is 'Trigger on kiln_private.charges: keeps kiln_private.charge_days equal to the ended charges'' sums in the same transaction (kiln_private.roll_up_charges) — per statement for updates and deletes, per row for a row inserted already ended.';

-- Reservations (status 'reserved') never reach the function: the WHEN clause is checked first.
create trigger tg_charges__roll_up_insert_ended after insert on kiln_private.charges
  for each row when (new.status <> 'reserved') execute function kiln_private.tg_charges__roll_up();

-- ---------------------------------------------------------------- 4. the backfill

create or replace function kiln_private.rebuild_charge_days() returns bigint
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_rows bigint;
begin
  -- No charge may change meanwhile (the triggers keep the rollup from here on).
  lock table kiln_private.charges in share mode;
  delete from kiln_private.charge_days;
  insert into kiln_private.charge_days
    (pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
     charges, settled_charges, released_charges, spend_micros)
  select pool_id, period_start, (created_at at time zone 'UTC')::date, account_id, workspace_id, key_id, model_id, origin,
         count(*), count(*) filter (where status = 'settled'), count(*) filter (where status = 'released'),
         coalesce(sum(settled_micros), 0)::bigint
  from kiln_private.charges
  where status <> 'reserved'
  group by pool_id, period_start, (created_at at time zone 'UTC')::date, account_id, workspace_id, key_id, model_id, origin;
  get diagnostics v_rows = row_count;
  return v_rows;
end;
$$;
comment on function kiln_private.rebuild_charge_days() is 'Recomputes kiln_private.charge_days from the whole ledger (under a share lock on kiln_private.charges, so no charge changes meanwhile). Returns the rollup''s row count. For migrations and repair; the triggers keep it exact otherwise.';

select kiln_private.rebuild_charge_days();

-- ---------------------------------------------------------------- 2. kiln.daily_spend

-- Same columns, same values. A group every charge of which moved to another model (a fallback)
-- keeps a zeroed rollup row, which the view leaves out as the ledger query did.
create view kiln.daily_spend as
  select d.day, d.account_id, d.workspace_id, d.key_id, d.model_id, d.origin,
         sum(d.charges)::bigint as charges,
         sum(d.settled_charges)::bigint as settled_charges,
         sum(d.released_charges)::bigint as released_charges,
         sum(d.open_reservations)::bigint as open_reservations,
         sum(d.spend_micros)::bigint as spend_micros,
         sum(d.held_micros)::bigint as held_micros
  from (select r.day, r.account_id, r.workspace_id, r.key_id, r.model_id, r.origin, r.charges, r.settled_charges,
               r.released_charges, 0::bigint as open_reservations, r.spend_micros, 0::bigint as held_micros
        from kiln_private.charge_days r
        union all
        select (c.created_at at time zone 'UTC')::date, c.account_id, c.workspace_id, c.key_id, c.model_id, c.origin,
               1, 0, 0, 1, 0, c.reserved_micros
        from kiln_private.charges c
        where c.status = 'reserved') d
  group by d.day, d.account_id, d.workspace_id, d.key_id, d.model_id, d.origin
  having sum(d.charges) > 0;
comment on view kiln.daily_spend is 'Ledger per UTC day, account, workspace (null = personal budget), API key (null = not a key), model and origin (api, mcp, app, workflow): charge counts by state, settled spend and still-held reservations, in microdollars. Reads the kiln_private.charge_days rollup plus the open reservations (charges_open_idx), so a filter on day or account costs what it returns.';

-- ---------------------------------------------------------------- 3. GET /usage/daily

create or replace function kiln.get_daily_usage(p_account_id uuid, p_workspace_id uuid, p_from date, p_to date)
  returns json
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
  -- Planned for the pool and range asked (a generic plan may read every pool's days by day).
  set plan_cache_mode = force_custom_plan
as $$
declare
  v_anchor timestamptz;
  v_visible boolean := true;
  v_period timestamptz;
  v_from date := p_from;
  v_to date := p_to;
  v_pool uuid := coalesce(p_workspace_id, p_account_id);
  v_days json;
begin
  if p_workspace_id is null then
    select a.period_anchor into v_anchor from kiln_private.accounts a where a.id = p_account_id;
  else
    -- A workspace's spend is shown to its current members only (a key whose owner left sees none).
    select w.plan_period_anchor,
           exists (select 1 from kiln_private.workspace_members m
                   where m.workspace_id = w.id and m.account_id = p_account_id and m.left_at is null)
      into v_anchor, v_visible
      from kiln_private.workspaces w where w.id = p_workspace_id;
  end if;
  if v_anchor is null then
    return null;
  end if;
  if v_from is null then
    -- The current period, as GET /usage counts it: [period start, next period start) in UTC days.
    v_period := kiln_private.period_start(v_anchor, now());
    v_from := (v_period at time zone 'UTC')::date;
    v_to := ((v_period + interval '1 month') at time zone 'UTC')::date - 1;
  elsif v_to is null then
    v_to := (now() at time zone 'UTC')::date;
  end if;
  if v_from > v_to or v_to - v_from > 365 then
    raise exception 'from must not be after to, and the range at most 366 days' using errcode = 'KI001';
  end if;
  select coalesce(json_agg(json_build_object(
           'day', to_char(x.day, 'YYYY-MM-DD'), 'model_id', x.model_id,
           'spend_micros', x.spend, 'charges', x.charges, 'held_micros', x.held) order by x.day, x.model_id), '[]')
    into v_days
    from (select d.day, d.model_id, sum(d.spend)::bigint as spend, sum(d.charges)::bigint as charges, sum(d.held)::bigint as held
          from (-- Ended charges from the rollup (a released one counts nothing).
                select r.day, r.model_id, r.spend_micros as spend, r.settled_charges as charges, 0::bigint as held
                from kiln_private.charge_days r
                where v_visible and r.pool_id = v_pool and r.day between v_from and v_to
                union all
                -- Reservations still open, at their reserved amount (charges_open_idx).
                select (c.created_at at time zone 'UTC')::date, c.model_id, c.reserved_micros, 1, c.reserved_micros
                from kiln_private.charges c
                where v_visible and c.status = 'reserved' and c.pool_id = v_pool
                  and c.created_at >= (v_from::timestamp at time zone 'UTC')
                  and c.created_at < ((v_to + 1)::timestamp at time zone 'UTC')) d
          group by d.day, d.model_id
          having sum(d.charges) > 0) x;
  return json_build_object(
    'scope', case when p_workspace_id is null then 'personal' else 'workspace' end,
    'workspace_id', p_workspace_id,
    'from', to_char(v_from, 'YYYY-MM-DD'),
    'to', to_char(v_to, 'YYYY-MM-DD'),
    'days', v_days);
end;
$$;
comment on function kiln.get_daily_usage(uuid,uuid,date,date) is 'The GET /usage/daily body: per UTC day and model, what the caller''s billing scope (the personal pool, or a workspace-bound caller''s Team pool) used — settled charges at their settled amount (kiln_private.charge_days) plus reservations still open at their reserved amount (charges_open_idx), on the day each charge was created. Without p_from: the current period; without p_to: through today. Null when the account (or workspace) does not exist; no days for a workspace the caller is no longer a member of. KI001 for from > to or more than 366 days.';
