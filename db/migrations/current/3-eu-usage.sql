-- Spend by end user and by metadata pair (docs/usage.md, "Usage by end user and by metadata"):
-- roll-ups kept beside kiln_private.charge_days by the same triggers (kiln_private.roll_up_charges),
-- rebuilt with it (kiln_private.rebuild_charge_days), and the reads over them.

-- Ended charges with an end user, per pool, UTC day and end user.
create table if not exists kiln_private.charge_end_user_days (
  pool_id uuid not null,
  day date not null,
  end_user text collate "C" not null,
  workspace_id uuid,
  charges bigint not null default 0,
  settled_charges bigint not null default 0,
  released_charges bigint not null default 0,
  spend_micros bigint not null default 0,
  batch_charges bigint not null default 0,
  batch_settled_charges bigint not null default 0,
  batch_released_charges bigint not null default 0,
  batch_spend_micros bigint not null default 0,
  primary key (pool_id, day, end_user)
) with (fillfactor = 80);
comment on table kiln_private.charge_end_user_days is 'Ended charges of kiln_private.charges with an end_user, summed per budget pool, UTC day of creation and end user, with the meaning of kiln_private.charge_days'' columns (batch_* the part of batch lines). Kept by kiln_private.roll_up_charges in the transaction that ends a charge; open reservations are read from the ledger.';
-- A day's end users by spend (GET /usage/daily?groupBy=endUser): keyset pages read in this order.
create index if not exists charge_end_user_days_spend_idx on kiln_private.charge_end_user_days
  (pool_id, day, (- spend_micros), end_user) where settled_charges > 0;

-- The same per calendar month (UTC): GET /end-users for a month reads it in spend order.
create table if not exists kiln_private.charge_end_user_months (
  pool_id uuid not null,
  month date not null,
  end_user text collate "C" not null,
  workspace_id uuid,
  charges bigint not null default 0,
  settled_charges bigint not null default 0,
  released_charges bigint not null default 0,
  spend_micros bigint not null default 0,
  batch_charges bigint not null default 0,
  batch_settled_charges bigint not null default 0,
  batch_released_charges bigint not null default 0,
  batch_spend_micros bigint not null default 0,
  primary key (pool_id, month, end_user)
) with (fillfactor = 80);
comment on table kiln_private.charge_end_user_months is 'kiln_private.charge_end_user_days summed per calendar month (UTC; month = its first day): the month''s end users of a pool in spend order (charge_end_user_months_spend_idx) for GET /end-users.';
create index if not exists charge_end_user_months_spend_idx on kiln_private.charge_end_user_months
  (pool_id, month, (- spend_micros), end_user) where settled_charges > 0;

-- Ended charges with metadata, per pool, UTC day and metadata pair (a charge with three pairs
-- counts in three rows).
create table if not exists kiln_private.charge_metadata_days (
  pool_id uuid not null,
  day date not null,
  mkey text collate "C" not null,
  mvalue text collate "C" not null,
  workspace_id uuid,
  charges bigint not null default 0,
  settled_charges bigint not null default 0,
  released_charges bigint not null default 0,
  spend_micros bigint not null default 0,
  batch_charges bigint not null default 0,
  batch_settled_charges bigint not null default 0,
  batch_released_charges bigint not null default 0,
  batch_spend_micros bigint not null default 0,
  primary key (pool_id, day, mkey, mvalue)
) with (fillfactor = 80);
comment on table kiln_private.charge_metadata_days is 'Ended charges of kiln_private.charges per budget pool, UTC day and metadata pair (mkey, mvalue): each charge counts once under each of its pairs. Same columns and upkeep as kiln_private.charge_end_user_days.';
create index if not exists charge_metadata_days_spend_idx on kiln_private.charge_metadata_days
  (pool_id, mkey, day, (- spend_micros), mvalue) where settled_charges > 0;

-- What the groups of a day add up to, per attribute: 'endUser' (charges with an end user) and
-- 'metadata.<key>' (charges with that key). The day's total minus this is the null group.
create table if not exists kiln_private.charge_attribute_days (
  pool_id uuid not null,
  day date not null,
  attribute text collate "C" not null,
  charges bigint not null default 0,
  settled_charges bigint not null default 0,
  released_charges bigint not null default 0,
  spend_micros bigint not null default 0,
  batch_charges bigint not null default 0,
  batch_settled_charges bigint not null default 0,
  batch_released_charges bigint not null default 0,
  batch_spend_micros bigint not null default 0,
  primary key (pool_id, day, attribute)
) with (fillfactor = 80);
comment on table kiln_private.charge_attribute_days is 'Per budget pool and UTC day, the ended charges that have an attribute: ''endUser'' (an end_user) or ''metadata.<key>'' (that metadata key): the sum of that attribute''s groups, so the day''s total (kiln_private.charge_days) minus it is the group without the attribute.';

--! include functions/kiln_private.roll_up_charges.sql
--! include functions/kiln_private.rebuild_charge_days.sql
--! include functions/kiln.get_daily_usage_groups.sql
--! include functions/kiln.get_daily_usage_groups_for_keys.sql
--! include functions/kiln.get_daily_usage_groups_for_callers.sql
--! include functions/kiln.list_end_users.sql
--! include functions/kiln.list_end_users_for_keys.sql
--! include functions/kiln.list_end_users_for_callers.sql
--! include views/kiln.usage_by_end_user.sql
grant select on kiln.usage_by_end_user to kiln_analyst;

-- The new roll-ups from the existing ledger (charge_days is recomputed alike).
select kiln_private.rebuild_charge_days();
