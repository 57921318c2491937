-- functions/kiln_private.key_used.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.key_used.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.key_used(k kiln_private.api_keys)
 RETURNS bigint
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- A key with its own budget: its running total. Any other: what its charges of the scope's
  -- current period hold or settled (the day roll-ups plus the open reservations).
  select case when k.budget_micros is not null then
    (select coalesce(b.held_micros + b.settled_micros, 0) from kiln_private.key_budget_periods b
     where b.key_id = k.id and b.period_start = kiln_private.key_period(k.account_id, k.workspace_id))
  else
    (select coalesce(sum(d.spend_micros), 0) from kiln_private.charge_days d
     where d.pool_id = coalesce(k.workspace_id, k.account_id) and d.key_id = k.id
       and d.period_start = kiln_private.key_period(k.account_id, k.workspace_id))
    + (select coalesce(sum(c.reserved_micros), 0) from kiln_private.charges c
       where c.key_id = k.id and c.status = 'reserved'
         and c.period_start = kiln_private.key_period(k.account_id, k.workspace_id))
  end;
$function$;
comment on function kiln_private.key_used(kiln_private.api_keys) is 'What a key spent this period of its scope (settled plus held), for GET /keys.';
