-- The object store down (docs/storage.md, "When the store is down"): an image generation whose
-- output could not be stored keeps the provider's output here until the store takes it, so a
-- retry never calls the provider again; a generation that ends drops it.
create table if not exists kiln_private.held_outputs (
  generation_id uuid not null primary key references kiln_private.generations (id) on delete cascade,
  data bytea not null,
  result jsonb not null,
  format text not null,
  cost_micros bigint not null check (cost_micros >= 0),
  provider_request_id text,
  model_id text not null,
  store_failing_since timestamptz not null default now(),
  store_failures integer not null default 1,
  last_error text,
  updated_at timestamptz not null default now()
);
comment on table kiln_private.held_outputs is 'An image generation''s output from its provider, held while the object store could not take it (docs/storage.md, "When the store is down"): retries store these bytes instead of calling the provider again. Dropped when the generation ends (completed, or failed past KILN_STORE_OUTAGE_GRACE, or canceled).';

--! include functions/kiln.hold_generation_output.sql
--! include functions/kiln.get_held_output.sql
--! include functions/kiln.start_generation.sql
--! include functions/kiln_private.tg_generations__drop_held.sql

drop trigger if exists tg_generations__drop_held on kiln_private.generations;
create trigger tg_generations__drop_held after update of status on kiln_private.generations
  for each row when (old.status is distinct from new.status and new.status in ('completed', 'failed'))
  execute function kiln_private.tg_generations__drop_held();
