-- Budgets per end user (docs/usage.md, "Budgets per end user"): a cap per billing scope (the pool:
-- the account, or the workspace of workspace-bound calls) and end user, reserved in the same
-- transaction as the pool's and the key's budgets.
create table if not exists kiln_private.end_user_budgets (
  pool_id uuid not null,
  end_user text not null check (char_length(end_user) between 1 and 128),
  budget_micros bigint not null check (budget_micros >= 0),
  period text not null check (period in ('day', 'month')),
  rpm integer check (rpm >= 1),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (pool_id, end_user)
);
comment on table kiln_private.end_user_budgets is 'PUT /end-users/{endUser}: an end user''s cap in a billing scope (pool_id: the account, or the workspace for workspace-bound calls), per UTC day or calendar month (UTC), and its optional rpm (GCRA bucket "end_user:<pool>:<end user>"). Enforced by kiln_private.reserve_budgets and kiln_private.insert_generations; changes are audited (end_user.budget_set, end_user.budget_removed).';

create table if not exists kiln_private.end_user_budget_periods (
  pool_id uuid not null,
  end_user text not null,
  period_start timestamptz not null,
  held_micros bigint not null default 0 check (held_micros >= 0),
  settled_micros bigint not null default 0 check (settled_micros >= 0),
  primary key (pool_id, end_user, period_start)
) with (fillfactor = 50);
-- Updated by every reservation, settlement and release of a capped end user: room on the page
-- keeps those updates HOT (as for kiln_private.rate_limit_buckets).
alter table kiln_private.end_user_budget_periods set (fillfactor = 50);
comment on table kiln_private.end_user_budget_periods is 'Running totals of end users with a cap, per period (a UTC day or a calendar month, as the cap says); debited in the same statement as the pool (kiln_private.reserve_budgets) and ended with it (settle_charge, release_charge, through charges.end_user_period).';

alter table kiln_private.charges add column if not exists end_user_period timestamptz;
comment on column kiln_private.charges.end_user_period is 'The reservation is also held on its end user''s cap: the period_start of its row in kiln_private.end_user_budget_periods (null = no cap held).';
-- An end user's spend in a period without a cap (GET /end-users/{endUser}) and the seed of a new
-- cap's period: its charges of the pool since a time.
create index if not exists charges_end_user_idx on kiln_private.charges (pool_id, end_user, created_at) where end_user is not null;

drop function if exists kiln_private.reserve_budgets(uuid[], uuid[], uuid[], text[], text[], bigint[], uuid[], uuid[], text[]);
drop function if exists kiln.reserve_budget(uuid, uuid, uuid, text, text, bigint, uuid, uuid, text);

--! include functions/kiln_private.end_user_period.sql
--! include functions/kiln_private.debit_end_user_pools.sql
--! include functions/kiln_private.reserve_budgets.sql
--! include functions/kiln.reserve_budget.sql
--! include functions/kiln.reserve_generation.sql
--! include functions/kiln_private.insert_generations.sql
--! include functions/kiln.settle_charge.sql
--! include functions/kiln.release_charge.sql
--! include functions/kiln_private.end_user_spend.sql
--! include functions/kiln_private.end_user_budget_json.sql
--! include functions/kiln.get_end_user_budget.sql
--! include functions/kiln.set_end_user_budget.sql
--! include functions/kiln.remove_end_user_budget.sql
--! include functions/kiln_private.tg_end_user_budgets__audit.sql

drop trigger if exists tg_end_user_budgets__audit on kiln_private.end_user_budgets;
create trigger tg_end_user_budgets__audit after insert or update or delete on kiln_private.end_user_budgets
  for each row execute function kiln_private.tg_end_user_budgets__audit();
