-- functions/kiln_private.debit_key_pools.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.debit_key_pools.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.debit_key_pools(p_keys uuid[], p_periods timestamp with time zone[], p_amounts bigint[], p_budgets bigint[])
 RETURNS uuid[]
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- kiln_private.debit_pools for keys' own budgets: keys locked in id order.
  with debited as (
    insert into kiln_private.key_budget_periods as b (key_id, period_start, held_micros)
      select u.k, u.period, u.amount
      from unnest(p_keys, p_periods, p_amounts, p_budgets) as u(k, period, amount, budget)
      where u.budget is null or u.amount <= u.budget
      order by u.k
    on conflict (key_id, period_start) do update
      set held_micros = b.held_micros + excluded.held_micros
      where p_budgets[array_position(p_keys, b.key_id)] is null
         or b.held_micros + b.settled_micros + excluded.held_micros <= p_budgets[array_position(p_keys, b.key_id)]
    returning b.key_id)
  select coalesce(array_agg(key_id), '{}') from debited;
$function$;
comment on function kiln_private.debit_key_pools(uuid[],timestamp with time zone[],bigint[],bigint[]) is 'Adds each amount to its key''s held total for the period when settled + held stays within the key''s budget, keys in id order; returns the keys debited.';
