--! Message: Batches and lanes

-- A batch (docs/api.md, "Batches"): a row, and its lines are generations with its batch_id. Lines
-- reserve nothing until they start; they are queued a few at a time (kiln_private.dispatch_batches),
-- taking turns across billing scopes, behind interactive work.
create table if not exists kiln_private.batches (
  id uuid primary key default kiln_private.uuid_v7(),
  account_id uuid not null references kiln_private.accounts(id),
  workspace_id uuid references kiln_private.workspaces(id),
  key_id uuid references kiln_private.api_keys(id),
  -- The billing scope the lines take turns in: the workspace, else the account.
  scope_id uuid not null,
  status text not null default 'in_progress' check (status in ('in_progress', 'completed', 'canceling', 'canceled', 'expired')),
  total integer not null check (total between 1 and 50000),
  completed integer not null default 0,
  failed integer not null default 0,
  canceled integer not null default 0,
  -- Lines 1 … next_line have been queued (a job each); in_queue of them have not started yet.
  next_line integer not null default 0,
  in_queue integer not null default 0,
  spent_micros bigint not null default 0,
  -- The batch passed its expiry: lines not started were ended as expired.
  expired boolean not null default false,
  created_at timestamptz not null default now(),
  started_at timestamptz,
  completed_at timestamptz,
  expires_at timestamptz not null,
  updated_at timestamptz not null default now(),
  check ((status in ('completed', 'canceled', 'expired')) = (completed_at is not null))
);
create index if not exists batches_account_created_idx on kiln_private.batches (account_id, created_at desc, id desc);
create index if not exists batches_open_idx on kiln_private.batches (expires_at) where status in ('in_progress', 'canceling');
comment on table kiln_private.batches is 'POST /batches: one row per batch; its lines are kiln_private.generations with batch_id. Counters are kept by kiln_private.tg_generations__batch.';

-- Whose turn it is: the billing scope queued longest ago goes next.
create table if not exists kiln_private.batch_turns (
  scope_id uuid primary key,
  turn bigint not null
);
create sequence if not exists kiln_private.batch_turn_seq;

alter table kiln_private.generations
  add column if not exists batch_id uuid references kiln_private.batches(id),
  add column if not exists batch_line integer,
  add column if not exists custom_id text;
create unique index if not exists generations_batch_line_key on kiln_private.generations (batch_id, batch_line) where batch_id is not null;
create index if not exists generations_batch_list_idx on kiln_private.generations (batch_id, created_at, batch_line) where batch_id is not null;
-- Slot-waiting generations, found without walking a batch's pending lines.
create index if not exists generations_waiting_idx on kiln_private.generations (account_id, created_at) where waiting and status = 'pending';

-- A batch line reserves when it starts, as a run output does.
alter table kiln_private.generations drop constraint if exists generations_charge_check;
alter table kiln_private.generations add constraint generations_charge_check
  check (charge_id is not null or run_id is not null or batch_id is not null) not valid;
alter table kiln_private.generations validate constraint generations_charge_check;

-- Batch lines emit no generation.* events: the batch does (batch.completed, …).
drop trigger if exists tg_generations__outbox on kiln_private.generations;
create trigger tg_generations__outbox after update of status on kiln_private.generations
  for each row when (old.status is distinct from new.status and new.status in ('completed', 'failed') and new.run_id is null and new.batch_id is null)
  execute function kiln_private.tg_generations__outbox();

--! include functions/kiln_private.batch_body.sql
--! include functions/kiln_private.batch_capacity.sql
--! include functions/kiln_private.dispatch_batches.sql
--! include functions/kiln.dispatch_batches.sql
--! include functions/kiln_private.finish_batch.sql
--! include functions/kiln_private.tg_generations__batch.sql
drop trigger if exists tg_generations__batch on kiln_private.generations;
create trigger tg_generations__batch after update of status on kiln_private.generations
  for each row when (old.status is distinct from new.status and new.batch_id is not null)
  execute function kiln_private.tg_generations__batch();
--! include functions/kiln.create_batch.sql
--! include functions/kiln.get_batch.sql
--! include functions/kiln.list_batches.sql
--! include functions/kiln.cancel_batch.sql
drop function if exists kiln.expire_batches(integer);
--! include functions/kiln.expire_batches.sql
--! include functions/kiln.end_batch_lines.sql
--! include functions/kiln.batch_results.sql
--! include functions/kiln.list_batch_generations.sql
--! include functions/kiln_private.generation_body.sql
--! include functions/kiln_private.nudge_waiting_generation.sql
--! include functions/kiln.defer_generation.sql
--! include functions/kiln.start_generation.sql
--! include functions/kiln.stream_generations.sql
