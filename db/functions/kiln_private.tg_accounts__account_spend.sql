-- functions/kiln_private.tg_accounts__account_spend.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_accounts__account_spend.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_accounts__account_spend()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_start timestamptz := kiln_private.period_start(new.period_anchor, now());
begin
  -- A new account starts at 0; a moved anchor re-reads the period it now falls in.
  insert into kiln_private.account_spend (account_id, period_start, period_end, used_micros)
    values (new.id, v_start, kiln_private.period_end(new.period_anchor, v_start),
            coalesce((select b.held_micros + b.settled_micros from kiln_private.budget_periods b
                      where b.pool_id = new.id and b.period_start = v_start), 0))
    on conflict (account_id) do update
      set period_start = excluded.period_start, period_end = excluded.period_end, used_micros = excluded.used_micros;
  return null;
end;
$function$;
comment on function kiln_private.tg_accounts__account_spend() is 'Trigger: every account has its kiln_private.account_spend row from creation; a changed period anchor recomputes it.';
