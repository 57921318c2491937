--! Message: Batch pricing and batch spend apart

-- A catalog entry's batch price (docs/providers.md, "Model catalog"): batch lines bill at
-- batch_markup instead of markup, their fallbacks too; null = the entry's markup.
alter table kiln_private.models add column if not exists batch_markup numeric;
alter table kiln_private.models drop constraint if exists models_batch_markup_check;
alter table kiln_private.models add constraint models_batch_markup_check
  check (batch_markup >= 1 and (markup is null or batch_markup <= markup));
comment on column kiln_private.models.batch_markup is 'What batch lines (POST /batches) bill at instead of markup: at least 1, at most markup; null = markup.';
--! include views/kiln.models.sql
--! include functions/kiln.upsert_model.sql

-- Batch spend apart (docs/usage.md, docs/analysts.md): a batch line's charge names its batch, and
-- the day roll-up keeps the batch part of each group beside its totals.
alter table kiln_private.charges add column if not exists batch_id uuid references kiln_private.batches(id);
create index if not exists charges_batch_idx on kiln_private.charges (batch_id) where batch_id is not null;
comment on column kiln_private.charges.batch_id is 'The batch whose line this charge bills (set when the line reserves: kiln.reserve_generation); null for every other charge.';
alter table kiln_private.charge_days
  add column if not exists batch_charges bigint not null default 0,
  add column if not exists batch_settled_charges bigint not null default 0,
  add column if not exists batch_released_charges bigint not null default 0,
  add column if not exists batch_spend_micros bigint not null default 0;
comment on column kiln_private.charge_days.batch_spend_micros is 'The part of spend_micros settled by batch lines (charges with batch_id); batch_charges, batch_settled_charges and batch_released_charges are the batch parts of the counts. The rest is interactive.';
--! include functions/kiln_private.roll_up_charges.sql
--! include functions/kiln_private.rebuild_charge_days.sql
--! include functions/kiln.reserve_generation.sql
-- Charges of batch lines made before the column: named now (the roll-up trigger moves their part).
update kiln_private.charges c set batch_id = g.batch_id
  from kiln_private.generations g
  where g.charge_id = c.id and g.batch_id is not null and c.batch_id is null;
--! include functions/kiln.get_daily_usage.sql
--! include views/kiln.daily_spend.sql
--! include views/kiln.daily_generations.sql

-- kiln.batches: one row per batch for analysts (docs/analysts.md).
--! include views/kiln.batches.sql
grant select on kiln.batches to kiln_analyst;
