-- functions/kiln_private.batch_capacity.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.batch_capacity.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.batch_capacity(p_account_id uuid)
 RETURNS integer
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- The account's parallel slots not in use and not already promised to a queued batch line.
  select coalesce(a.parallel_slots, t.parallel_slots)
         - kiln_private.busy_slots(a.id)
         - coalesce((select sum(b.in_queue) from kiln_private.batches b
                     where b.account_id = a.id and b.status = 'in_progress'), 0)::int
  from kiln_private.accounts a
  join kiln_private.tiers t on t.tier = a.tier
  where a.id = p_account_id and a.tier <> 'blocked';
$function$;
comment on function kiln_private.batch_capacity(uuid) is 'How many more batch lines of the account may be queued now: its parallel slots less those processing and those promised to queued lines (null for a blocked or unknown account).';
