-- functions/kiln_private.tg_budget_periods__account_spend.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_budget_periods__account_spend.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_budget_periods__account_spend()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- The common case, on the reservation's hot path: the same period, one primary-key update.
  update kiln_private.account_spend s set used_micros = new.held_micros + new.settled_micros
    where s.account_id = new.pool_id and s.period_start = new.period_start;
  if found or tg_op = 'UPDATE' then
    -- (An update of a period the row no longer holds is a late settlement of an earlier period:
    -- a later period's figure stays.)
    return null;
  end if;
  -- A new period's first reservation. Pools that are workspaces have no row and update nothing.
  update kiln_private.account_spend s
    set used_micros = new.held_micros + new.settled_micros,
        period_start = new.period_start,
        period_end = kiln_private.period_end(a.period_anchor, new.period_start)
    from kiln_private.accounts a
    where s.account_id = new.pool_id and a.id = new.pool_id and s.period_start < new.period_start;
  return null;
end;
$function$;
comment on function kiln_private.tg_budget_periods__account_spend() is 'Trigger: an account pool''s held + settled for its latest period into kiln_private.account_spend, in the transaction of the reservation or settlement: one primary-key update; a new period''s first row (an insert) also moves the row''s period.';
