-- functions/kiln_private.debit_end_user_pools.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.debit_end_user_pools.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.debit_end_user_pools(p_pools uuid[], p_end_users text[], p_periods timestamp with time zone[], p_amounts bigint[], p_budgets bigint[])
 RETURNS text[]
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- kiln_private.debit_pools for end users' caps: rows locked in (pool, end user) order.
  with u as (
    select u.pool, u.eu, u.period, u.amount, u.budget
    from unnest(p_pools, p_end_users, p_periods, p_amounts, p_budgets) as u(pool, eu, period, amount, budget)
  ), debited as (
    insert into kiln_private.end_user_budget_periods as b (pool_id, end_user, period_start, held_micros)
      select u.pool, u.eu, u.period, u.amount
      from u
      where u.amount <= u.budget
      order by u.pool, u.eu
    on conflict (pool_id, end_user, period_start) do update
      set held_micros = b.held_micros + excluded.held_micros
      where b.held_micros + b.settled_micros + excluded.held_micros
            <= (select u.budget from u where u.pool = b.pool_id and u.eu = b.end_user)
    returning b.pool_id, b.end_user)
  select coalesce(array_agg(pool_id::text || ':' || end_user), '{}') from debited;
$function$;
comment on function kiln_private.debit_end_user_pools(uuid[],text[],timestamp with time zone[],bigint[],bigint[]) is 'Adds each amount to its end user''s held total for the period when settled + held stays within the cap, rows in (pool, end user) order; returns the ones debited as ''<pool id>:<end user>''.';
