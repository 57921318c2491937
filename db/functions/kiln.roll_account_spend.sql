-- functions/kiln.roll_account_spend.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.roll_account_spend.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.roll_account_spend(p_limit integer DEFAULT 1000)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_n int;
begin
  -- Rows locked in id order and never waited for (a reservation holding one updates it anyway).
  update kiln_private.account_spend s
    set used_micros = 0,
        period_start = kiln_private.period_start(a.period_anchor, now()),
        period_end = kiln_private.period_end(a.period_anchor, kiln_private.period_start(a.period_anchor, now()))
    from kiln_private.accounts a
    where a.id = s.account_id
      and s.account_id in (select x.account_id from kiln_private.account_spend x
                           where x.used_micros > 0 and x.period_end <= now()
                           order by x.account_id limit p_limit for update skip locked);
  get diagnostics v_n = row_count;
  return v_n;
end;
$function$;
comment on function kiln.roll_account_spend(integer) is 'Housekeeping: zeroes up to p_limit kiln_private.account_spend rows whose period ended without a new charge (a partial-index range: free when there are none). Readers already count such rows as 0; this puts them back in index order.';
