-- functions/kiln_private.debit_pools.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.debit_pools.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.debit_pools(p_pools uuid[], p_periods timestamp with time zone[], p_amounts bigint[], p_budgets bigint[])
 RETURNS uuid[]
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;
comment on function kiln_private.debit_pools(uuid[],timestamp with time zone[],bigint[],bigint[]) is 'Adds each amount to its pool''s held total for the period when settled + held stays within the pool''s budget (null = unlimited), pools in id order; returns the pools debited.';
