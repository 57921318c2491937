-- functions/kiln_private.rebuild_charge_days.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.rebuild_charge_days.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.rebuild_charge_days()
 RETURNS bigint
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_rows bigint;
begin
  -- No charge may change meanwhile (the triggers keep the rollup from here on).
  lock table kiln_private.charges in share mode;
  delete from kiln_private.charge_days;
  insert into kiln_private.charge_days
    (pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
     charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, period_start, (created_at at time zone 'UTC')::date, account_id, workspace_id, key_id, model_id, origin,
         count(*), count(*) filter (where status = 'settled'), count(*) filter (where status = 'released'),
         coalesce(sum(settled_micros), 0)::bigint,
         count(*) filter (where batch_id is not null),
         count(*) filter (where batch_id is not null and status = 'settled'),
         count(*) filter (where batch_id is not null and status = 'released'),
         coalesce(sum(settled_micros) filter (where batch_id is not null), 0)::bigint
  from kiln_private.charges
  where status <> 'reserved'
  group by pool_id, period_start, (created_at at time zone 'UTC')::date, account_id, workspace_id, key_id, model_id, origin;
  get diagnostics v_rows = row_count;
  return v_rows;
end;
$function$;
comment on function kiln_private.rebuild_charge_days() is 'Recomputes kiln_private.charge_days from the whole ledger (under a share lock on kiln_private.charges, so no charge changes meanwhile). Returns the rollup''s row count. For migrations and repair; the triggers keep it exact otherwise.';
