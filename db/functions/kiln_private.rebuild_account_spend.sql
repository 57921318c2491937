-- functions/kiln_private.rebuild_account_spend.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.rebuild_account_spend.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.rebuild_account_spend()
 RETURNS bigint
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_n bigint;
begin
  insert into kiln_private.account_spend (account_id, period_start, period_end, used_micros)
    select a.id, p.s, kiln_private.period_end(a.period_anchor, p.s), coalesce(b.held_micros + b.settled_micros, 0)
    from kiln_private.accounts a
    cross join lateral (select kiln_private.period_start(a.period_anchor, now()) as s) p
    left join kiln_private.budget_periods b on b.pool_id = a.id and b.period_start = p.s
  on conflict (account_id) do update
    set period_start = excluded.period_start, period_end = excluded.period_end, used_micros = excluded.used_micros
    where (account_spend.period_start, account_spend.period_end, account_spend.used_micros)
          is distinct from (excluded.period_start, excluded.period_end, excluded.used_micros);
  get diagnostics v_n = row_count;
  return v_n;
end;
$function$;
comment on function kiln_private.rebuild_account_spend() is 'Every account''s kiln_private.account_spend row from its current period''s budget_periods row (the backfill; a restore or a bulk load runs it again). Returns the rows written.';
