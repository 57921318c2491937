-- functions/kiln_private.roll_up_charges.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.roll_up_charges.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.roll_up_charges(p_added kiln_private.charges[], p_removed kiln_private.charges[])
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
begin
  -- PL/pgSQL, so that each statement's plan is kept for the session (a SQL function planned its
  -- five statements at every call: most of a settlement's roll-up time).
  -- Each ended charge row contributes its counts to its group (an open reservation contributes
  -- nothing), and a batch line's (batch_id set) to the group's batch part too; a change is its
  -- new row minus its old one.
  with delta as (
    select c.pool_id, c.period_start, (c.created_at at time zone 'UTC')::date as day, c.account_id, c.workspace_id,
           c.key_id, c.model_id, c.origin, c.sign, (c.batch_id is not null)::int as batch,
           (c.status = 'settled')::int as settled, (c.status = 'released')::int as released,
           coalesce(c.settled_micros, 0) as spend
    from (select a.*, 1 as sign from unnest(p_added) a
          union all
          select r.*, -1 from unnest(p_removed) r) c
    where c.status <> 'reserved'
  ), summed as (
    select pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
           sum(sign)::bigint as charges, sum(sign * settled)::bigint as settled, sum(sign * released)::bigint as released,
           sum(sign * spend)::bigint as spend,
           sum(sign * batch)::bigint as b_charges, sum(sign * batch * settled)::bigint as b_settled,
           sum(sign * batch * released)::bigint as b_released, sum(sign * batch * spend)::bigint as b_spend
    from delta
    group by pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin
  )
  insert into kiln_private.charge_days as t
    (pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
     charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
         charges, settled, released, spend, b_charges, b_settled, b_released, b_spend
  from summed
  where charges <> 0 or settled <> 0 or released <> 0 or spend <> 0
     or b_charges <> 0 or b_settled <> 0 or b_released <> 0 or b_spend <> 0
  -- Rows locked in key order, as budgets are: concurrent writers cannot deadlock here.
  order by pool_id, day, account_id, model_id, origin, key_id, period_start
  on conflict (pool_id, day, account_id, model_id, origin, key_id, period_start) do update
    set charges = t.charges + excluded.charges,
        settled_charges = t.settled_charges + excluded.settled_charges,
        released_charges = t.released_charges + excluded.released_charges,
        spend_micros = t.spend_micros + excluded.spend_micros,
        batch_charges = t.batch_charges + excluded.batch_charges,
        batch_settled_charges = t.batch_settled_charges + excluded.batch_settled_charges,
        batch_released_charges = t.batch_released_charges + excluded.batch_released_charges,
        batch_spend_micros = t.batch_spend_micros + excluded.batch_spend_micros;
  -- The same contributions by attribution (docs/usage.md, "Usage by end user and by metadata"):
  -- only charges with an end user or metadata make rows there. Each table's rows in key order, the
  -- tables always in this order.
  with delta as (
    select c.pool_id, (c.created_at at time zone 'UTC')::date as day, c.workspace_id, c.end_user, c.metadata, c.sign,
           (c.batch_id is not null)::int as batch, (c.status = 'settled')::int as settled,
           (c.status = 'released')::int as released, coalesce(c.settled_micros, 0) as spend
    from (select a.*, 1 as sign from unnest(p_added) a
          union all
          select r.*, -1 from unnest(p_removed) r) c
    where c.status <> 'reserved' and c.end_user is not null
  ), summed as (
    select pool_id, day, end_user, workspace_id,
           sum(sign)::bigint as charges, sum(sign * settled)::bigint as settled, sum(sign * released)::bigint as released,
           sum(sign * spend)::bigint as spend,
           sum(sign * batch)::bigint as b_charges, sum(sign * batch * settled)::bigint as b_settled,
           sum(sign * batch * released)::bigint as b_released, sum(sign * batch * spend)::bigint as b_spend
    from delta
    group by pool_id, day, end_user, workspace_id
  )
  insert into kiln_private.charge_end_user_days as t
    (pool_id, day, end_user, workspace_id, charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, day, end_user, workspace_id, charges, settled, released, spend, b_charges, b_settled, b_released, b_spend
  from summed
  where charges <> 0 or settled <> 0 or released <> 0 or spend <> 0
     or b_charges <> 0 or b_settled <> 0 or b_released <> 0 or b_spend <> 0
  order by pool_id, day, end_user
  on conflict (pool_id, day, end_user) do update
    set charges = t.charges + excluded.charges,
        settled_charges = t.settled_charges + excluded.settled_charges,
        released_charges = t.released_charges + excluded.released_charges,
        spend_micros = t.spend_micros + excluded.spend_micros,
        batch_charges = t.batch_charges + excluded.batch_charges,
        batch_settled_charges = t.batch_settled_charges + excluded.batch_settled_charges,
        batch_released_charges = t.batch_released_charges + excluded.batch_released_charges,
        batch_spend_micros = t.batch_spend_micros + excluded.batch_spend_micros;
  with delta as (
    select c.pool_id, date_trunc('month', c.created_at at time zone 'UTC')::date as month, c.workspace_id, c.end_user, c.sign,
           (c.batch_id is not null)::int as batch, (c.status = 'settled')::int as settled,
           (c.status = 'released')::int as released, coalesce(c.settled_micros, 0) as spend
    from (select a.*, 1 as sign from unnest(p_added) a
          union all
          select r.*, -1 from unnest(p_removed) r) c
    where c.status <> 'reserved' and c.end_user is not null
  ), summed as (
    select pool_id, month, end_user, workspace_id,
           sum(sign)::bigint as charges, sum(sign * settled)::bigint as settled, sum(sign * released)::bigint as released,
           sum(sign * spend)::bigint as spend,
           sum(sign * batch)::bigint as b_charges, sum(sign * batch * settled)::bigint as b_settled,
           sum(sign * batch * released)::bigint as b_released, sum(sign * batch * spend)::bigint as b_spend
    from delta
    group by pool_id, month, end_user, workspace_id
  )
  insert into kiln_private.charge_end_user_months as t
    (pool_id, month, end_user, workspace_id, charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, month, end_user, workspace_id, charges, settled, released, spend, b_charges, b_settled, b_released, b_spend
  from summed
  where charges <> 0 or settled <> 0 or released <> 0 or spend <> 0
     or b_charges <> 0 or b_settled <> 0 or b_released <> 0 or b_spend <> 0
  order by pool_id, month, end_user
  on conflict (pool_id, month, end_user) do update
    set charges = t.charges + excluded.charges,
        settled_charges = t.settled_charges + excluded.settled_charges,
        released_charges = t.released_charges + excluded.released_charges,
        spend_micros = t.spend_micros + excluded.spend_micros,
        batch_charges = t.batch_charges + excluded.batch_charges,
        batch_settled_charges = t.batch_settled_charges + excluded.batch_settled_charges,
        batch_released_charges = t.batch_released_charges + excluded.batch_released_charges,
        batch_spend_micros = t.batch_spend_micros + excluded.batch_spend_micros;
  with delta as (
    select c.pool_id, (c.created_at at time zone 'UTC')::date as day, c.workspace_id, m.key as mkey, m.value as mvalue, c.sign,
           (c.batch_id is not null)::int as batch, (c.status = 'settled')::int as settled,
           (c.status = 'released')::int as released, coalesce(c.settled_micros, 0) as spend
    from (select a.*, 1 as sign from unnest(p_added) a
          union all
          select r.*, -1 from unnest(p_removed) r) c
    cross join lateral jsonb_each_text(case when jsonb_typeof(c.metadata) = 'object' then c.metadata end) m
    where c.status <> 'reserved' and m.value is not null
  ), summed as (
    select pool_id, day, mkey, mvalue, workspace_id,
           sum(sign)::bigint as charges, sum(sign * settled)::bigint as settled, sum(sign * released)::bigint as released,
           sum(sign * spend)::bigint as spend,
           sum(sign * batch)::bigint as b_charges, sum(sign * batch * settled)::bigint as b_settled,
           sum(sign * batch * released)::bigint as b_released, sum(sign * batch * spend)::bigint as b_spend
    from delta
    group by pool_id, day, mkey, mvalue, workspace_id
  )
  insert into kiln_private.charge_metadata_days as t
    (pool_id, day, mkey, mvalue, workspace_id, charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, day, mkey, mvalue, workspace_id, charges, settled, released, spend, b_charges, b_settled, b_released, b_spend
  from summed
  where charges <> 0 or settled <> 0 or released <> 0 or spend <> 0
     or b_charges <> 0 or b_settled <> 0 or b_released <> 0 or b_spend <> 0
  order by pool_id, day, mkey collate "C", mvalue collate "C"
  on conflict (pool_id, day, mkey, mvalue) do update
    set charges = t.charges + excluded.charges,
        settled_charges = t.settled_charges + excluded.settled_charges,
        released_charges = t.released_charges + excluded.released_charges,
        spend_micros = t.spend_micros + excluded.spend_micros,
        batch_charges = t.batch_charges + excluded.batch_charges,
        batch_settled_charges = t.batch_settled_charges + excluded.batch_settled_charges,
        batch_released_charges = t.batch_released_charges + excluded.batch_released_charges,
        batch_spend_micros = t.batch_spend_micros + excluded.batch_spend_micros;
  -- What each attribute's groups add up to per day: 'endUser', and 'metadata.<key>' per key.
  with delta as (
    select c.pool_id, (c.created_at at time zone 'UTC')::date as day, a.attribute, c.sign,
           (c.batch_id is not null)::int as batch, (c.status = 'settled')::int as settled,
           (c.status = 'released')::int as released, coalesce(c.settled_micros, 0) as spend
    from (select a.*, 1 as sign from unnest(p_added) a
          union all
          select r.*, -1 from unnest(p_removed) r) c
    cross join lateral (select 'endUser' as attribute where c.end_user is not null
                        union all
                        select 'metadata.' || m.key from jsonb_each_text(case when jsonb_typeof(c.metadata) = 'object' then c.metadata end) m
                        where m.value is not null) a
    where c.status <> 'reserved'
  ), summed as (
    select pool_id, day, attribute,
           sum(sign)::bigint as charges, sum(sign * settled)::bigint as settled, sum(sign * released)::bigint as released,
           sum(sign * spend)::bigint as spend,
           sum(sign * batch)::bigint as b_charges, sum(sign * batch * settled)::bigint as b_settled,
           sum(sign * batch * released)::bigint as b_released, sum(sign * batch * spend)::bigint as b_spend
    from delta
    group by pool_id, day, attribute
  )
  insert into kiln_private.charge_attribute_days as t
    (pool_id, day, attribute, charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, day, attribute, charges, settled, released, spend, b_charges, b_settled, b_released, b_spend
  from summed
  where charges <> 0 or settled <> 0 or released <> 0 or spend <> 0
     or b_charges <> 0 or b_settled <> 0 or b_released <> 0 or b_spend <> 0
  order by pool_id, day, attribute collate "C"
  on conflict (pool_id, day, attribute) do update
    set charges = t.charges + excluded.charges,
        settled_charges = t.settled_charges + excluded.settled_charges,
        released_charges = t.released_charges + excluded.released_charges,
        spend_micros = t.spend_micros + excluded.spend_micros,
        batch_charges = t.batch_charges + excluded.batch_charges,
        batch_settled_charges = t.batch_settled_charges + excluded.batch_settled_charges,
        batch_released_charges = t.batch_released_charges + excluded.batch_released_charges,
        batch_spend_micros = t.batch_spend_micros + excluded.batch_spend_micros;
end;
$function$;
comment on function kiln_private.roll_up_charges(kiln_private.charges[],kiln_private.charges[]) is 'Adds the contribution of the ended (settled or released) rows of p_added to kiln_private.charge_days and subtracts that of p_removed (the old versions of changed rows), with the part of batch lines (batch_id set) in the batch_* columns, one upsert per group, groups in key order. Open reservations contribute nothing. The same for charges with an end user or metadata, into kiln_private.charge_end_user_days, charge_end_user_months, charge_metadata_days (one row per pair) and charge_attribute_days (per attribute, the sum of its groups).';
