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
  -- The roll-ups by attribution (docs/usage.md, "Usage by end user and by metadata"), alike.
  delete from kiln_private.charge_end_user_days;
  delete from kiln_private.charge_end_user_months;
  delete from kiln_private.charge_metadata_days;
  delete from kiln_private.charge_attribute_days;
  insert into kiln_private.charge_end_user_days
    (pool_id, day, end_user, workspace_id, charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, (created_at at time zone 'UTC')::date, end_user, min(workspace_id::text)::uuid,
         count(*), count(*) filter (where status = 'settled'), count(*) filter (where status = 'released'),
         coalesce(sum(settled_micros), 0)::bigint,
         count(*) filter (where batch_id is not null),
         count(*) filter (where batch_id is not null and status = 'settled'),
         count(*) filter (where batch_id is not null and status = 'released'),
         coalesce(sum(settled_micros) filter (where batch_id is not null), 0)::bigint
  from kiln_private.charges
  where status <> 'reserved' and end_user is not null
  group by pool_id, (created_at at time zone 'UTC')::date, end_user;
  insert into kiln_private.charge_end_user_months
    (pool_id, month, end_user, workspace_id, charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, date_trunc('month', day)::date, end_user, min(workspace_id::text)::uuid,
         sum(charges), sum(settled_charges), sum(released_charges), sum(spend_micros),
         sum(batch_charges), sum(batch_settled_charges), sum(batch_released_charges), sum(batch_spend_micros)
  from kiln_private.charge_end_user_days
  group by pool_id, date_trunc('month', day)::date, end_user;
  insert into kiln_private.charge_metadata_days
    (pool_id, day, mkey, mvalue, workspace_id, charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select c.pool_id, (c.created_at at time zone 'UTC')::date, m.key, m.value, min(c.workspace_id::text)::uuid,
         count(*), count(*) filter (where c.status = 'settled'), count(*) filter (where c.status = 'released'),
         coalesce(sum(c.settled_micros), 0)::bigint,
         count(*) filter (where c.batch_id is not null),
         count(*) filter (where c.batch_id is not null and c.status = 'settled'),
         count(*) filter (where c.batch_id is not null and c.status = 'released'),
         coalesce(sum(c.settled_micros) filter (where c.batch_id is not null), 0)::bigint
  from kiln_private.charges c
  cross join lateral jsonb_each_text(case when jsonb_typeof(c.metadata) = 'object' then c.metadata end) m
  where c.status <> 'reserved' and m.value is not null
  group by c.pool_id, (c.created_at at time zone 'UTC')::date, m.key, m.value;
  insert into kiln_private.charge_attribute_days
    (pool_id, day, attribute, charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, day, 'endUser', sum(charges), sum(settled_charges), sum(released_charges), sum(spend_micros),
         sum(batch_charges), sum(batch_settled_charges), sum(batch_released_charges), sum(batch_spend_micros)
  from kiln_private.charge_end_user_days
  group by pool_id, day
  union all
  select c.pool_id, (c.created_at at time zone 'UTC')::date, 'metadata.' || m.key,
         count(*), count(*) filter (where c.status = 'settled'), count(*) filter (where c.status = 'released'),
         coalesce(sum(c.settled_micros), 0)::bigint,
         count(*) filter (where c.batch_id is not null),
         count(*) filter (where c.batch_id is not null and c.status = 'settled'),
         count(*) filter (where c.batch_id is not null and c.status = 'released'),
         coalesce(sum(c.settled_micros) filter (where c.batch_id is not null), 0)::bigint
  from kiln_private.charges c
  cross join lateral jsonb_each_text(case when jsonb_typeof(c.metadata) = 'object' then c.metadata end) m
  where c.status <> 'reserved' and m.value is not null
  group by c.pool_id, (c.created_at at time zone 'UTC')::date, 'metadata.' || m.key;
  return v_rows;
end;
$function$;
comment on function kiln_private.rebuild_charge_days() is 'Recomputes kiln_private.charge_days from the whole ledger (under a share lock on kiln_private.charges, so no charge changes meanwhile). Rebuilds the roll-ups by attribution (charge_end_user_days, charge_end_user_months, charge_metadata_days, charge_attribute_days) alike. Returns charge_days'' row count. For migrations and repair; the triggers keep it exact otherwise.';
