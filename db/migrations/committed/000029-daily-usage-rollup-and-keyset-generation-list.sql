--! Previous: sha1:d0e85615bf7261dc2b3bf3f51aa99d768b5d742c
--! Hash: sha1:cff243760560177b5a742796e69e85c9569c6be7
--! Message: Daily usage from a ledger rollup; a keyset-paged generation list

--! split: 1-current.sql
-- Daily usage from a rollup kept in the settling transaction, and a keyset-paged generation list.
--
-- 1. kiln_private.charge_days: the ledger summed per pool, period, UTC day (of the charge's
--    creation), account, workspace, key, model and origin. Statement-level triggers on
--    kiln_private.charges keep it exact in the same transaction as every insert, settle, release or
--    model change (the settle functions are not redefined). A charge counts on the day it was
--    created: while reserved with its reserved amount (as held), once settled with its settled
--    amount, once released with nothing — so a pool's days of a period add up to
--    budget_periods.held_micros + settled_micros, which is GET /usage's used_micros.
--    Lock order: every writer of a charge already holds its pool's budget_periods row (reserve,
--    settle and release lock it first), and a rollup row belongs to one pool, so the rollup adds
--    no wait that the pool lock does not already impose.
-- 2. kiln.daily_spend keeps its columns and reads the rollup (O(days asked), not O(ledger)).
-- 3. kiln.get_daily_usage (GET /usage/daily) and kiln.list_generations (GET /generations), each
--    with a *_for_keys form that authorizes and reads in one round trip.
--
-- Re-runnable (graphile-migrate "current"): create … if not exists, create or replace, drop … if
-- exists; the backfill recomputes the rollup from the ledger under a lock that stops writers.

-- ---------------------------------------------------------------- 1. the rollup

create table if not exists kiln_private.charge_days (
  pool_id uuid not null,
  period_start timestamptz not null,
  day date not null,
  account_id uuid not null references kiln_private.accounts(id),
  workspace_id uuid references kiln_private.workspaces(id),
  key_id uuid references kiln_private.api_keys(id),
  model_id text not null,
  origin text not null,
  charges bigint not null default 0,
  settled_charges bigint not null default 0,
  released_charges bigint not null default 0,
  open_reservations bigint not null default 0,
  spend_micros bigint not null default 0,
  held_micros bigint not null default 0
  -- No checks that counts stay >= 0: an upsert checks its proposed row before it finds the
  -- conflict, and a settlement's proposed row is a negative delta. The tests compare it to the ledger.
) with (fillfactor = 80);
comment on table kiln_private.charge_days is 'kiln_private.charges summed per pool, period, UTC day of creation, account, workspace, key, model and origin; kept by the tg_charges__roll_up_* triggers in the transaction that changes a charge. spend_micros = settled amounts, held_micros = reservations still open.';

-- The rollup's key; GET /usage/daily reads a pool's days through it. Every count sits outside the
-- indexes, so a settlement's update is HOT.
create unique index if not exists charge_days_key
  on kiln_private.charge_days (pool_id, day, account_id, model_id, origin, key_id, period_start) nulls not distinct;
-- kiln.daily_spend by account (one account's month) and by day (every account's month).
create index if not exists charge_days_account_day_idx on kiln_private.charge_days (account_id, day);
create index if not exists charge_days_day_idx on kiln_private.charge_days (day);

create or replace function kiln_private.roll_up_charges(p_added kiln_private.charges[], p_removed kiln_private.charges[])
  returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  -- Each charge row contributes its counts to its group; a change is its new row minus its old one.
  with delta as (
    select c.pool_id, c.period_start, (c.created_at at time zone 'UTC')::date as day, c.account_id, c.workspace_id,
           c.key_id, c.model_id, c.origin, c.sign,
           (c.status = 'settled')::int as settled, (c.status = 'released')::int as released,
           (c.status = 'reserved')::int as open,
           coalesce(c.settled_micros, 0) as spend,
           case when c.status = 'reserved' then c.reserved_micros else 0 end as held
    from (select a.*, 1 as sign from unnest(p_added) a
          union all
          select r.*, -1 from unnest(p_removed) r) c
  ), summed as (
    select pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
           sum(sign)::bigint as charges, sum(sign * settled)::bigint as settled, sum(sign * released)::bigint as released,
           sum(sign * open)::bigint as open, sum(sign * spend)::bigint as spend, sum(sign * held)::bigint as held
    from delta
    group by pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin
  )
  insert into kiln_private.charge_days as t
    (pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
     charges, settled_charges, released_charges, open_reservations, spend_micros, held_micros)
  select pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
         charges, settled, released, open, spend, held
  from summed
  where charges <> 0 or settled <> 0 or released <> 0 or open <> 0 or spend <> 0 or held <> 0
  -- Rows locked in key order, as budgets are: concurrent writers cannot deadlock here.
  order by pool_id, day, account_id, model_id, origin, key_id, period_start
  on conflict (pool_id, day, account_id, model_id, origin, key_id, period_start) do update
    set charges = t.charges + excluded.charges,
        settled_charges = t.settled_charges + excluded.settled_charges,
        released_charges = t.released_charges + excluded.released_charges,
        open_reservations = t.open_reservations + excluded.open_reservations,
        spend_micros = t.spend_micros + excluded.spend_micros,
        held_micros = t.held_micros + excluded.held_micros;
$$;
comment on function kiln_private.roll_up_charges(kiln_private.charges[], kiln_private.charges[]) is 'Adds the contribution of p_added charge rows to kiln_private.charge_days and subtracts that of p_removed (the old versions of changed rows), one upsert per group, groups in key order.';

create or replace function kiln_private.tg_charges__roll_up() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  -- Statement-level with transition tables: a batch of 50 reservations is one upsert, not 50.
  if tg_op = 'INSERT' then
    perform kiln_private.roll_up_charges(array(select n::kiln_private.charges from new_rows n), '{}');
  elsif tg_op = 'UPDATE' then
    perform kiln_private.roll_up_charges(array(select n::kiln_private.charges from new_rows n), array(select o::kiln_private.charges from old_rows o));
  elsif tg_op = 'DELETE' then
    perform kiln_private.roll_up_charges('{}', array(select o::kiln_private.charges from old_rows o));
  end if;
  return null;
end;
$$;
comment on function kiln_private.tg_charges__roll_up() is 'Trigger (per statement) on kiln_private.charges: keeps kiln_private.charge_days equal to the ledger''s sums in the same transaction (kiln_private.roll_up_charges).';

-- A transition table needs one trigger per event.
drop trigger if exists tg_charges__roll_up_insert on kiln_private.charges;
create trigger tg_charges__roll_up_insert after insert on kiln_private.charges
  referencing new table as new_rows
  for each statement execute function kiln_private.tg_charges__roll_up();
drop trigger if exists tg_charges__roll_up_update on kiln_private.charges;
create trigger tg_charges__roll_up_update after update on kiln_private.charges
  referencing old table as old_rows new table as new_rows
  for each statement execute function kiln_private.tg_charges__roll_up();
drop trigger if exists tg_charges__roll_up_delete on kiln_private.charges;
create trigger tg_charges__roll_up_delete after delete on kiln_private.charges
  referencing old table as old_rows
  for each statement execute function kiln_private.tg_charges__roll_up();

-- Backfill: recomputed from the ledger while no one can write a charge (the triggers above keep it
-- from here on), so re-running this file leaves it exact.
lock table kiln_private.charges in share mode;
delete from kiln_private.charge_days;
insert into kiln_private.charge_days
  (pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
   charges, settled_charges, released_charges, open_reservations, spend_micros, held_micros)
select pool_id, period_start, (created_at at time zone 'UTC')::date, account_id, workspace_id, key_id, model_id, origin,
       count(*), count(*) filter (where status = 'settled'), count(*) filter (where status = 'released'),
       count(*) filter (where status = 'reserved'), coalesce(sum(settled_micros), 0)::bigint,
       coalesce(sum(reserved_micros) filter (where status = 'reserved'), 0)::bigint
from kiln_private.charges
group by pool_id, period_start, (created_at at time zone 'UTC')::date, account_id, workspace_id, key_id, model_id, origin;

-- ---------------------------------------------------------------- 2. kiln.daily_spend

-- Same columns, same values; a group every charge of which moved to another model (a fallback)
-- keeps a zeroed rollup row, which the view leaves out as the ledger query did.
create or replace view kiln.daily_spend as
  select d.day, d.account_id, d.workspace_id, d.key_id, d.model_id, d.origin,
         sum(d.charges)::bigint as charges,
         sum(d.settled_charges)::bigint as settled_charges,
         sum(d.released_charges)::bigint as released_charges,
         sum(d.open_reservations)::bigint as open_reservations,
         sum(d.spend_micros)::bigint as spend_micros,
         sum(d.held_micros)::bigint as held_micros
  from kiln_private.charge_days d
  group by d.day, d.account_id, d.workspace_id, d.key_id, d.model_id, d.origin
  having sum(d.charges) > 0;
comment on view kiln.daily_spend is 'Ledger per UTC day, account, workspace (null = personal budget), API key (null = not a key), model and origin (api, mcp, app, workflow): charge counts by state, settled spend and still-held reservations, in microdollars. Reads the kiln_private.charge_days rollup, so a filter on day or account costs what it returns.';

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
    from (select d.day, d.model_id,
                 sum(d.spend_micros + d.held_micros)::bigint as spend,
                 sum(d.settled_charges + d.open_reservations)::bigint as charges,
                 sum(d.held_micros)::bigint as held
          from kiln_private.charge_days d
          where v_visible and d.pool_id = v_pool and d.day between v_from and v_to
          group by d.day, d.model_id
          having sum(d.settled_charges + d.open_reservations) > 0) x;
  return json_build_object(
    'scope', case when p_workspace_id is null then 'personal' else 'workspace' end,
    'workspace_id', p_workspace_id,
    'from', to_char(v_from, 'YYYY-MM-DD'),
    'to', to_char(v_to, 'YYYY-MM-DD'),
    'days', v_days);
end;
$$;
comment on function kiln.get_daily_usage(uuid,uuid,date,date) is 'The GET /usage/daily body: per UTC day and model, what the caller''s billing scope (the personal pool, or a workspace-bound caller''s Team pool) used — settled charges at their settled amount plus reservations still open at their reserved amount, on the day each charge was created — from kiln_private.charge_days. Without p_from: the current period; without p_to: through today. Null when the account (or workspace) does not exist; no days for a workspace the caller is no longer a member of. KI001 for from > to or more than 366 days.';

create or replace function kiln.get_daily_usage_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_froms date[], p_tos date[])
  returns table (ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
as $$
  select r.*, case when r.status = 'ok' then kiln.get_daily_usage(r.account_id, r.workspace_id, p_froms[r.ord], p_tos[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$$;
comment on function kiln.get_daily_usage_for_keys(bytea[],integer,date[],date[]) is 'GET /usage/daily for a batch in one transaction: authorizes each key (read scope, the per-key read bucket at p_read_rpm and the key''s own rpm) and, when admitted, returns the daily usage of its billing scope (kiln.get_daily_usage; the caller checks the range first).';

-- ---------------------------------------------------------------- 4. GET /generations

-- Keyset pages of one account's jobs in one billing scope and origin, newest first. The list
-- probes every (type, status) pair the filters allow — at most 2 × 4 — each an index range read
-- newest first and stopped after a page, then merges them: any filter combination's page costs
-- O(page × pairs), never a scan of the account's history, however rare the match.
create index if not exists generations_list_idx
  on kiln_private.generations (account_id, (coalesce(workspace_id, account_id)), origin, type, status, created_at, id);
create index if not exists generations_list_model_idx
  on kiln_private.generations (account_id, (coalesce(workspace_id, account_id)), origin, model_id, type, status, created_at, id);

create or replace function kiln.list_generations(p_account_id uuid, p_workspace_id uuid, p_origin text, p_limit integer,
    p_before_at timestamptz, p_before_id uuid, p_statuses text[], p_types text[], p_model_id text, p_since timestamptz)
  returns json
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
  -- A generic plan cannot tell one account's rows from the table's and reads generations_created_idx
  -- newest first with every other condition as a filter (a scan of history when the match is rare).
  set plan_cache_mode = force_custom_plan
as $$
declare
  v_pool uuid := coalesce(p_workspace_id, p_account_id);
  v_limit int := least(greatest(coalesce(p_limit, 20), 1), 100);
  v_at timestamptz := coalesce(p_before_at, 'infinity');
  v_id uuid := coalesce(p_before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
  v_since timestamptz := coalesce(p_since, '-infinity');
  v_statuses text[] := coalesce(p_statuses, array['pending', 'processing', 'completed', 'failed']);
  v_types text[] := coalesce(p_types, array['image', 'code']);
  v_ids uuid[];
  v_next json;
  v_data json;
begin
  if p_model_id is null then
    select array_agg(h.id order by h.created_at desc, h.id desc) into v_ids
    from (select h.created_at, h.id
          from unnest(v_types) t(type) cross join unnest(v_statuses) s(status)
          cross join lateral (
            select g.created_at, g.id from kiln_private.generations g
            where g.account_id = p_account_id and coalesce(g.workspace_id, g.account_id) = v_pool
              and g.origin = p_origin and g.type = t.type and g.status = s.status
              and (g.created_at, g.id) < (v_at, v_id) and g.created_at >= v_since
            order by g.created_at desc, g.id desc
            limit v_limit + 1) h
          order by h.created_at desc, h.id desc
          limit v_limit + 1) h;
  else
    select array_agg(h.id order by h.created_at desc, h.id desc) into v_ids
    from (select h.created_at, h.id
          from unnest(v_types) t(type) cross join unnest(v_statuses) s(status)
          cross join lateral (
            select g.created_at, g.id from kiln_private.generations g
            where g.account_id = p_account_id and coalesce(g.workspace_id, g.account_id) = v_pool
              and g.origin = p_origin and g.model_id = p_model_id and g.type = t.type and g.status = s.status
              and (g.created_at, g.id) < (v_at, v_id) and g.created_at >= v_since
            order by g.created_at desc, g.id desc
            limit v_limit + 1) h
          order by h.created_at desc, h.id desc
          limit v_limit + 1) h;
  end if;
  v_ids := coalesce(v_ids, '{}');
  select coalesce(json_agg(kiln_private.generation_body(g) order by g.created_at desc, g.id desc), '[]'),
         -- More than a page: the last item of the page is where the next one starts.
         case when cardinality(v_ids) > v_limit then
           (select json_build_object('at', (extract(epoch from l.created_at) * 1000000)::bigint::text, 'id', l.id)
            from kiln_private.generations l where l.id = v_ids[v_limit]) end
    into v_data, v_next
    from kiln_private.generations g
    where g.id = any (v_ids[1:v_limit]);
  return json_build_object('data', v_data, 'next', v_next);
end;
$$;
comment on function kiln.list_generations(uuid,uuid,text,integer,timestamp with time zone,uuid,text[],text[],text,timestamp with time zone) is 'A page of an account''s generations in one billing scope (p_workspace_id null = the personal budget) created through p_origin, newest first, before (p_before_at, p_before_id) (keyset), filtered by statuses, types, model and created at or after p_since (null = any): {data: [kiln_private.generation_body], next: {at: epoch microseconds, id} | null}. At most 2 × 4 index probes of a page each.';

create or replace function kiln.list_generations_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_origin text, p_limits integer[],
    p_before_ats timestamptz[], p_before_ids uuid[], p_statuses text[], p_types text[], p_model_ids text[], p_sinces timestamptz[])
  returns table (ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
as $$
  -- Per request, statuses and types come as comma-separated lists (null = any).
  select r.*, case when r.status = 'ok' then kiln.list_generations(
           r.account_id, r.workspace_id, p_origin, p_limits[r.ord], p_before_ats[r.ord], p_before_ids[r.ord],
           string_to_array(p_statuses[r.ord], ','), string_to_array(p_types[r.ord], ','), p_model_ids[r.ord], p_sinces[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$$;
comment on function kiln.list_generations_for_keys(bytea[],integer,text,integer[],timestamp with time zone[],uuid[],text[],text[],text[],timestamp with time zone[]) is 'GET /generations for a batch in one transaction: authorizes each key (read scope, the per-key read bucket at p_read_rpm and the key''s own rpm) and, when admitted, returns that page of the key''s account''s generations in the key''s billing scope created through p_origin (kiln.list_generations).';
