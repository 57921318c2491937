--! Previous: -
--! Hash: sha1:70823520fa49df310dd6fa0f49fac1ad33216060
--! Message: foundation

--! split: 1-foundation.sql
-- Foundation: accounts, workspaces and Team plans, API keys, budgets with an
-- append-only charges ledger, GCRA rate-limit buckets and the model catalog.
-- Tables live in kiln_private; the service calls functions and views in kiln.

create extension if not exists pgcrypto;

create schema if not exists kiln;
create schema if not exists kiln_private;
comment on schema kiln is 'Functions and views the Kiln service and analysts may use.';
comment on schema kiln_private is 'Kiln tables; not for direct use by clients.';

--------------------------------------------------------------------------------
-- Tiers: per-tier defaults an operator can change with plain SQL.

create table kiln_private.tiers (
  tier text primary key check (tier in ('legacy_free', 'pro', 'enterprise', 'blocked')),
  default_budget_micros bigint check (default_budget_micros >= 0),
  parallel_slots int not null check (parallel_slots >= 0)
);
comment on table kiln_private.tiers is
  'Per-tier defaults: personal budget per period for new accounts (null = unlimited) and how many generations may be processing at once.';
insert into kiln_private.tiers (tier, default_budget_micros, parallel_slots) values
  ('legacy_free', 1000000, 2),
  ('pro', 20000000, 4),
  ('enterprise', null, 8),
  ('blocked', 0, 0);

--------------------------------------------------------------------------------
-- Accounts (users).

create table kiln_private.accounts (
  id uuid primary key default gen_random_uuid(),
  email text not null check (email ~ '^[^@\s]+@[^@\s]+$' and length(email) <= 320),
  tier text not null default 'legacy_free' references kiln_private.tiers (tier),
  -- Personal budget per period in microdollars; null = unlimited.
  budget_micros bigint check (budget_micros >= 0),
  -- Periods are calendar months counted from this anchor; they roll lazily
  -- (a new period simply has no usage row yet).
  period_anchor timestamptz not null default date_trunc('day', now()),
  created_at timestamptz not null default now()
);
create unique index accounts_email_key on kiln_private.accounts (lower(email));

--------------------------------------------------------------------------------
-- Workspaces, members and the Team plan (pooled budget).

create table kiln_private.workspaces (
  id uuid primary key default gen_random_uuid(),
  name text not null check (length(name) between 1 and 200),
  owner_id uuid not null references kiln_private.accounts (id),
  plan_status text not null default 'none' check (plan_status in ('none', 'active', 'lapsed')),
  -- Pooled budget per period; null = unlimited.
  plan_budget_micros bigint check (plan_budget_micros >= 0),
  plan_period_anchor timestamptz not null default date_trunc('day', now()),
  created_at timestamptz not null default now()
);
create index workspaces_owner_idx on kiln_private.workspaces (owner_id);

create table kiln_private.workspace_members (
  workspace_id uuid not null references kiln_private.workspaces (id) on delete cascade,
  account_id uuid not null references kiln_private.accounts (id),
  role text not null check (role in ('owner', 'admin', 'member')),
  joined_at timestamptz not null default now(),
  -- Members who leave keep their row so history and charges still resolve.
  left_at timestamptz,
  primary key (workspace_id, account_id)
);
create index workspace_members_account_idx on kiln_private.workspace_members (account_id);

--------------------------------------------------------------------------------
-- API keys: only the SHA-256 hash of the secret is stored.

create table kiln_private.api_keys (
  id uuid primary key default gen_random_uuid(),
  account_id uuid not null references kiln_private.accounts (id),
  key_hash bytea not null unique check (length(key_hash) = 32),
  -- First characters of the key, safe to show ("kiln_live_AbCd…").
  display_prefix text not null,
  scopes text[] not null check (scopes <@ array['read', 'write'] and cardinality(scopes) > 0),
  -- Optional per-key requests-per-minute limit applying to every call of the key.
  rpm int check (rpm > 0),
  -- Optional billing binding to a workspace's Team pool.
  workspace_id uuid references kiln_private.workspaces (id),
  name text,
  created_at timestamptz not null default now(),
  revoked_at timestamptz
);
create index api_keys_account_idx on kiln_private.api_keys (account_id);

--------------------------------------------------------------------------------
-- Budget pools: one row per pool and period, maintained in the same
-- transaction as the ledger so reserve can check and debit atomically.

create table kiln_private.budget_periods (
  pool_id uuid not null,
  period_start timestamptz not null,
  held_micros bigint not null default 0 check (held_micros >= 0),
  settled_micros bigint not null default 0 check (settled_micros >= 0),
  primary key (pool_id, period_start)
);
comment on table kiln_private.budget_periods is
  'Running totals per budget pool (an account id or a workspace id) and period; derived from kiln_private.charges in the same transaction.';

-- The ledger: one row per billable output, reserved and then settled or released.
create table kiln_private.charges (
  id uuid primary key default gen_random_uuid(),
  account_id uuid not null references kiln_private.accounts (id),
  -- Set when the charge draws on a workspace's Team pool.
  workspace_id uuid references kiln_private.workspaces (id),
  pool_id uuid not null,
  period_start timestamptz not null,
  key_id uuid references kiln_private.api_keys (id),
  model_id text not null,
  origin text not null check (origin in ('api', 'mcp', 'app', 'workflow')),
  -- What was charged for: a generation or a workflow run output (set by later migrations).
  generation_id uuid,
  workflow_run_id uuid,
  node_id text,
  status text not null default 'reserved' check (status in ('reserved', 'settled', 'released')),
  reserved_micros bigint not null check (reserved_micros >= 0),
  settled_micros bigint check (settled_micros >= 0 and settled_micros <= reserved_micros),
  created_at timestamptz not null default now(),
  finished_at timestamptz,
  check ((status = 'settled') = (settled_micros is not null))
);
create index charges_account_created_idx on kiln_private.charges (account_id, created_at);
create index charges_pool_period_idx on kiln_private.charges (pool_id, period_start);
create index charges_generation_idx on kiln_private.charges (generation_id) where generation_id is not null;
create index charges_key_idx on kiln_private.charges (key_id) where key_id is not null;

--------------------------------------------------------------------------------
-- GCRA rate-limit buckets: the theoretical arrival time per bucket key.

create table kiln_private.rate_limit_buckets (
  key text primary key,
  tat timestamptz not null
);
comment on table kiln_private.rate_limit_buckets is
  'GCRA state: theoretical arrival time per bucket ("read:<key id>", "key:<key id>", "transform:<account id>").';

--------------------------------------------------------------------------------
-- Model catalog.

create table kiln_private.models (
  id text primary key check (id ~ '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$'),
  name text not null,
  description text,
  category text not null check (category in ('image', 'text', 'svg')),
  provider text not null check (provider in ('local', 'openai')),
  upstream jsonb,
  supports_image_input boolean not null default false,
  input_modalities text[] not null default array['text'],
  output_modalities text[] not null default array['text'],
  -- Upstream cost: {"micros_per_image": n} or {"input_micros_per_token": n, "output_micros_per_token": n}; null = unknown.
  cost jsonb,
  max_output_tokens int check (max_output_tokens > 0),
  -- Null = the service's default markup.
  markup numeric check (markup >= 1),
  enabled boolean not null default true,
  sort_order int not null default 100,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

insert into kiln_private.models
  (id, name, description, category, provider, upstream, supports_image_input, input_modalities, output_modalities, cost, max_output_tokens, markup, sort_order)
values
  ('local/sketch', 'Local Sketch (development)',
   'Local development model: offline, deterministic procedural images. Not an AI model.',
   'image', 'local', null, true, array['text', 'image'], array['image'],
   '{"micros_per_image": 1000}', null, 1, 10),
  ('local/coder', 'Local Coder (development)',
   'Local development model: offline, deterministic code templates for every target language. Not an AI model.',
   'text', 'local', null, true, array['text', 'image'], array['text'],
   '{"input_micros_per_token": 0.1, "output_micros_per_token": 0.5}', 4096, 1, 20),
  ('local/vector', 'Local Vector (development)',
   'Local development model: offline, deterministic SVG drawings. Not an AI model.',
   'svg', 'local', null, false, array['text'], array['text'],
   '{"input_micros_per_token": 0.1, "output_micros_per_token": 0.5}', 4096, 1, 30);

--------------------------------------------------------------------------------
-- Periods.

create function kiln_private.period_start(anchor timestamptz, at timestamptz) returns timestamptz
  language sql immutable parallel safe
as $$
  -- Whole months elapsed since the anchor; the period is [anchor + n months, anchor + n+1 months).
  select anchor + make_interval(months => greatest(0,
    (extract(year from age(at, anchor)) * 12 + extract(month from age(at, anchor)))::int));
$$;
comment on function kiln_private.period_start(timestamptz, timestamptz) is
  'Start of the monthly budget period containing `at`, for periods anchored at `anchor`.';

--------------------------------------------------------------------------------
-- Key authentication and rate limiting, in one call per request.

create function kiln.consume_rate_limits(p_keys text[], p_limits int[])
  returns int
  language plpgsql volatile
  set lock_timeout = '2s'
as $$
declare
  v_now timestamptz := clock_timestamp();
  v_retry numeric := 0;
  v_i int;
  v_tat timestamptz;
  v_interval interval;
  v_new_tat timestamptz[] := array[]::timestamptz[];
begin
  if cardinality(p_keys) is distinct from cardinality(p_limits) then
    raise exception 'keys and limits differ in length' using errcode = '22023';
  end if;
  if coalesce(cardinality(p_keys), 0) = 0 then
    return 0;
  end if;
  insert into kiln_private.rate_limit_buckets (key, tat)
    select k, '-infinity' from unnest(p_keys) k
    on conflict (key) do nothing;
  -- Lock every bucket in a fixed order (no deadlocks), decide, then write all or none,
  -- so a request denied by one bucket consumes nothing from the others.
  perform 1 from kiln_private.rate_limit_buckets
    where key = any (p_keys) order by key for update;
  for v_i in 1 .. cardinality(p_keys) loop
    select tat into v_tat from kiln_private.rate_limit_buckets where key = p_keys[v_i];
    -- Emission interval T = 60 s / N; a burst of N is allowed (tolerance N·T = 60 s).
    v_interval := make_interval(secs => 60.0 / p_limits[v_i]);
    v_new_tat := v_new_tat || (greatest(v_tat, v_now) + v_interval);
    if v_new_tat[v_i] - v_now > interval '60 seconds' then
      v_retry := greatest(v_retry,
        extract(epoch from (v_new_tat[v_i] - v_now - interval '60 seconds')));
    end if;
  end loop;
  if v_retry > 0 then
    -- Rounded up: waiting this long always finds room again.
    return greatest(1, ceil(v_retry)::int);
  end if;
  for v_i in 1 .. cardinality(p_keys) loop
    update kiln_private.rate_limit_buckets set tat = v_new_tat[v_i] where key = p_keys[v_i];
  end loop;
  return 0;
end;
$$;
comment on function kiln.consume_rate_limits(text[], int[]) is
  'GCRA on the database clock: admits one request against every bucket (N per minute, burst N) or none. Returns 0 when admitted, else retry-after in whole seconds (rounded up).';

create type kiln.request_auth as (
  status text,          -- ok | unauthorized | insufficient_scope | rate_limited
  key_id uuid,
  account_id uuid,
  workspace_id uuid,
  tier text,
  scopes text[],
  retry_after int
);

create function kiln.authorize_request(
  p_key_hash bytea,
  p_scope text,
  p_bucket text,        -- 'read' | 'transform' | null (no endpoint bucket)
  p_bucket_rpm int
) returns kiln.request_auth
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_key kiln_private.api_keys;
  v_tier text;
  v_keys text[] := array[]::text[];
  v_limits int[] := array[]::int[];
  v_retry int;
begin
  -- Always a fresh read: a revoked key fails on the very next request.
  select * into v_key from kiln_private.api_keys
    where key_hash = p_key_hash and revoked_at is null;
  if not found then
    return row('unauthorized', null, null, null, null, null, null)::kiln.request_auth;
  end if;
  select tier into v_tier from kiln_private.accounts where id = v_key.account_id;
  if not (p_scope = any (v_key.scopes) or (p_scope = 'read' and 'write' = any (v_key.scopes))) then
    return row('insufficient_scope', v_key.id, v_key.account_id, v_key.workspace_id, v_tier, v_key.scopes, null)::kiln.request_auth;
  end if;
  if v_key.rpm is not null then
    v_keys := v_keys || ('key:' || v_key.id);
    v_limits := v_limits || v_key.rpm;
  end if;
  if p_bucket = 'read' then
    v_keys := v_keys || ('read:' || v_key.id);
    v_limits := v_limits || p_bucket_rpm;
  elsif p_bucket = 'transform' then
    v_keys := v_keys || ('transform:' || v_key.account_id);
    v_limits := v_limits || p_bucket_rpm;
  elsif p_bucket is not null then
    raise exception 'unknown bucket %', p_bucket using errcode = '22023';
  end if;
  v_retry := kiln.consume_rate_limits(v_keys, v_limits);
  if v_retry > 0 then
    return row('rate_limited', v_key.id, v_key.account_id, v_key.workspace_id, v_tier, v_key.scopes, v_retry)::kiln.request_auth;
  end if;
  return row('ok', v_key.id, v_key.account_id, v_key.workspace_id, v_tier, v_key.scopes, 0)::kiln.request_auth;
end;
$$;
comment on function kiln.authorize_request(bytea, text, text, int) is
  'Authenticates an API key by its SHA-256 hash, checks the scope, then applies the key''s custom rpm bucket and the endpoint bucket. Missing, revoked and unknown keys all give status unauthorized.';

create function kiln.consume_account_rate_limit(p_account_id uuid, p_bucket text, p_rpm int)
  returns int
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select kiln.consume_rate_limits(array[p_bucket || ':' || p_account_id::text], array[p_rpm]);
$$;
comment on function kiln.consume_account_rate_limit(uuid, text, int) is
  'Per-account bucket (e.g. transform) for callers that are not API keys (MCP). Returns retry-after seconds or 0.';

--------------------------------------------------------------------------------
-- Accounts, keys and workspaces (operator functions).

create function kiln.create_account(p_email text, p_tier text default 'legacy_free', p_budget_micros bigint default null, p_use_tier_default boolean default true)
  returns kiln_private.accounts
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_account kiln_private.accounts;
  v_budget bigint := p_budget_micros;
begin
  if p_use_tier_default and v_budget is null then
    select default_budget_micros into v_budget from kiln_private.tiers where tier = p_tier;
    if not found then
      raise exception 'unknown tier %', p_tier using errcode = 'KI001';
    end if;
  end if;
  insert into kiln_private.accounts (email, tier, budget_micros)
    values (p_email, p_tier, v_budget)
    returning * into v_account;
  return v_account;
exception
  when unique_violation then
    raise exception 'an account with email % already exists', p_email using errcode = 'KC001';
  when check_violation or foreign_key_violation then
    raise exception 'invalid account (email or tier)' using errcode = 'KI001';
end;
$$;
comment on function kiln.create_account(text, text, bigint, boolean) is
  'Creates an account. The budget defaults to the tier''s default unless given (null with p_use_tier_default = false means unlimited).';

create function kiln.create_api_key(
  p_account_id uuid, p_key_hash bytea, p_display_prefix text, p_scopes text[], p_rpm int, p_workspace_id uuid, p_name text default null
) returns kiln_private.api_keys
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_key kiln_private.api_keys;
begin
  perform 1 from kiln_private.accounts where id = p_account_id;
  if not found then
    raise exception 'account not found' using errcode = 'KN001';
  end if;
  if p_workspace_id is not null then
    -- Only a current owner or admin may bind a key to the workspace's pool.
    perform 1 from kiln_private.workspace_members
      where workspace_id = p_workspace_id and account_id = p_account_id
        and left_at is null and role in ('owner', 'admin');
    if not found then
      raise exception 'only a workspace owner or admin may bind a key to it' using errcode = 'KF001';
    end if;
  end if;
  insert into kiln_private.api_keys (account_id, key_hash, display_prefix, scopes, rpm, workspace_id, name)
    values (p_account_id, p_key_hash, p_display_prefix, p_scopes, p_rpm, p_workspace_id, p_name)
    returning * into v_key;
  return v_key;
exception
  when check_violation then
    raise exception 'invalid key settings (scopes must be read and/or write, rpm > 0)' using errcode = 'KI001';
end;
$$;
comment on function kiln.create_api_key(uuid, bytea, text, text[], int, uuid, text) is
  'Stores a new API key (hash only). Workspace binding requires a current owner or admin of that workspace.';

create function kiln.revoke_api_key(p_key_id uuid) returns kiln_private.api_keys
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_key kiln_private.api_keys;
begin
  update kiln_private.api_keys set revoked_at = coalesce(revoked_at, now())
    where id = p_key_id returning * into v_key;
  if not found then
    raise exception 'key not found' using errcode = 'KN001';
  end if;
  return v_key;
end;
$$;
comment on function kiln.revoke_api_key(uuid) is 'Revokes a key; effective on the very next request. Idempotent.';

create function kiln.create_workspace(p_name text, p_owner_id uuid) returns kiln_private.workspaces
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_ws kiln_private.workspaces;
begin
  insert into kiln_private.workspaces (name, owner_id) values (p_name, p_owner_id) returning * into v_ws;
  insert into kiln_private.workspace_members (workspace_id, account_id, role) values (v_ws.id, p_owner_id, 'owner');
  return v_ws;
exception
  when foreign_key_violation then
    raise exception 'owner account not found' using errcode = 'KN001';
  when check_violation then
    raise exception 'invalid workspace name' using errcode = 'KI001';
end;
$$;
comment on function kiln.create_workspace(text, uuid) is 'Creates a workspace with its owner as first member.';

create function kiln.add_workspace_member(p_workspace_id uuid, p_account_id uuid, p_role text default 'member')
  returns kiln_private.workspace_members
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_member kiln_private.workspace_members;
begin
  if p_role not in ('admin', 'member') then
    raise exception 'role must be admin or member' using errcode = 'KI001';
  end if;
  insert into kiln_private.workspace_members (workspace_id, account_id, role)
    values (p_workspace_id, p_account_id, p_role)
    on conflict (workspace_id, account_id) do update
      set role = case when workspace_members.role = 'owner' then 'owner' else excluded.role end,
          left_at = null,
          joined_at = case when workspace_members.left_at is null then workspace_members.joined_at else now() end
    returning * into v_member;
  return v_member;
exception
  when foreign_key_violation then
    raise exception 'workspace or account not found' using errcode = 'KN001';
end;
$$;
comment on function kiln.add_workspace_member(uuid, uuid, text) is 'Adds (or re-adds) a member with a role.';

create function kiln.remove_workspace_member(p_workspace_id uuid, p_account_id uuid)
  returns kiln_private.workspace_members
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_member kiln_private.workspace_members;
begin
  update kiln_private.workspace_members set left_at = coalesce(left_at, now())
    where workspace_id = p_workspace_id and account_id = p_account_id
    returning * into v_member;
  if not found then
    raise exception 'not a member of that workspace' using errcode = 'KN001';
  end if;
  return v_member;
end;
$$;
comment on function kiln.remove_workspace_member(uuid, uuid) is
  'Marks a member as left (the row stays); their workspace-bound keys then get 402 on spending calls.';

create function kiln.set_workspace_plan(p_workspace_id uuid, p_status text, p_budget_micros bigint, p_set_budget boolean)
  returns kiln_private.workspaces
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_ws kiln_private.workspaces;
begin
  update kiln_private.workspaces
    set plan_status = p_status,
        plan_budget_micros = case when p_set_budget then p_budget_micros else plan_budget_micros end,
        plan_period_anchor = case when plan_status = 'none' then date_trunc('day', now()) else plan_period_anchor end
    where id = p_workspace_id
    returning * into v_ws;
  if not found then
    raise exception 'workspace not found' using errcode = 'KN001';
  end if;
  return v_ws;
exception
  when check_violation then
    raise exception 'invalid plan status or budget' using errcode = 'KI001';
end;
$$;
comment on function kiln.set_workspace_plan(uuid, text, bigint, boolean) is
  'Sets a workspace''s Team plan status (active or lapsed) and optionally its pooled budget (null = unlimited).';

--------------------------------------------------------------------------------
-- Budgets: reserve the worst case, settle the actual, or release.

create function kiln.reserve_budget(
  p_account_id uuid,
  p_workspace_id uuid,
  p_key_id uuid,
  p_model_id text,
  p_origin text,
  p_amount_micros bigint,
  p_generation_id uuid default null,
  p_workflow_run_id uuid default null,
  p_node_id text default null
) returns kiln_private.charges
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_account kiln_private.accounts;
  v_ws kiln_private.workspaces;
  v_pool uuid;
  v_budget bigint;
  v_period timestamptz;
  v_charge kiln_private.charges;
begin
  if p_amount_micros is null or p_amount_micros < 0 then
    raise exception 'reservation must be a non-negative amount' using errcode = '22023';
  end if;
  select * into v_account from kiln_private.accounts where id = p_account_id;
  if not found then
    raise exception 'account not found' using errcode = 'KN001';
  end if;
  if v_account.tier = 'blocked' then
    raise exception 'this account cannot start generations' using errcode = 'KQ001';
  end if;
  if p_workspace_id is null then
    v_pool := v_account.id;
    v_budget := v_account.budget_micros;
    v_period := kiln_private.period_start(v_account.period_anchor, now());
  else
    select * into v_ws from kiln_private.workspaces where id = p_workspace_id;
    if not found or v_ws.plan_status <> 'active' then
      raise exception 'the workspace''s Team plan is not active' using errcode = 'KP001';
    end if;
    perform 1 from kiln_private.workspace_members
      where workspace_id = p_workspace_id and account_id = p_account_id and left_at is null;
    if not found then
      raise exception 'the key''s owner is no longer a member of the workspace' using errcode = 'KP001';
    end if;
    v_pool := v_ws.id;
    v_budget := v_ws.plan_budget_micros;
    v_period := kiln_private.period_start(v_ws.plan_period_anchor, now());
  end if;

  -- One atomic check-and-debit on the pool's period row: concurrent reservations
  -- serialise on that row, so settled + held never exceeds the budget.
  insert into kiln_private.budget_periods as b (pool_id, period_start, held_micros)
    select v_pool, v_period, p_amount_micros
    where v_budget is null or p_amount_micros <= v_budget
    on conflict (pool_id, period_start) do update
      set held_micros = b.held_micros + excluded.held_micros
      where v_budget is null or b.held_micros + b.settled_micros + excluded.held_micros <= v_budget;
  if not found then
    raise exception 'the budget for this period is exhausted' using errcode = 'KQ001';
  end if;

  insert into kiln_private.charges
    (account_id, workspace_id, pool_id, period_start, key_id, model_id, origin, reserved_micros,
     generation_id, workflow_run_id, node_id)
  values
    (p_account_id, p_workspace_id, v_pool, v_period, p_key_id, p_model_id, p_origin, p_amount_micros,
     p_generation_id, p_workflow_run_id, p_node_id)
  returning * into v_charge;
  return v_charge;
end;
$$;
comment on function kiln.reserve_budget(uuid, uuid, uuid, text, text, bigint, uuid, uuid, text) is
  'Reserves the worst-case cost on the personal pool or, for workspace-bound calls, the Team pool. Raises KQ001 (blocked tier or budget exhausted) or KP001 (plan not active, or caller left the workspace).';

create function kiln.settle_charge(p_charge_id uuid, p_amount_micros bigint) returns kiln_private.charges
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_charge kiln_private.charges;
  v_amount bigint;
begin
  select * into v_charge from kiln_private.charges where id = p_charge_id for update;
  if not found then
    raise exception 'charge not found' using errcode = 'KN001';
  end if;
  if v_charge.status <> 'reserved' then
    -- Idempotent: a retried or duplicated job never charges twice.
    return v_charge;
  end if;
  -- Settlement never exceeds the reservation.
  v_amount := least(greatest(coalesce(p_amount_micros, 0), 0), v_charge.reserved_micros);
  update kiln_private.budget_periods
    set held_micros = held_micros - v_charge.reserved_micros,
        settled_micros = settled_micros + v_amount
    where pool_id = v_charge.pool_id and period_start = v_charge.period_start;
  update kiln_private.charges
    set status = 'settled', settled_micros = v_amount, finished_at = now()
    where id = p_charge_id
    returning * into v_charge;
  return v_charge;
end;
$$;
comment on function kiln.settle_charge(uuid, bigint) is
  'Settles a reservation at the actual cost (clamped to the reservation). Idempotent: settling or releasing twice changes nothing.';

create function kiln.release_charge(p_charge_id uuid) returns kiln_private.charges
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_charge kiln_private.charges;
begin
  select * into v_charge from kiln_private.charges where id = p_charge_id for update;
  if not found then
    raise exception 'charge not found' using errcode = 'KN001';
  end if;
  if v_charge.status <> 'reserved' then
    return v_charge;
  end if;
  update kiln_private.budget_periods
    set held_micros = held_micros - v_charge.reserved_micros
    where pool_id = v_charge.pool_id and period_start = v_charge.period_start;
  update kiln_private.charges
    set status = 'released', finished_at = now()
    where id = p_charge_id
    returning * into v_charge;
  return v_charge;
end;
$$;
comment on function kiln.release_charge(uuid) is
  'Releases a reservation without charging (failed output). Idempotent; a settled charge stays settled.';

--------------------------------------------------------------------------------
-- Usage (GET /usage).

create function kiln.get_usage(p_account_id uuid, p_workspace_id uuid) returns json
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_account kiln_private.accounts;
  v_period timestamptz;
  v_used bigint;
  v_ws kiln_private.workspaces;
  v_ws_ok boolean := false;
  v_ws_period timestamptz;
  v_ws_used bigint;
begin
  select * into v_account from kiln_private.accounts where id = p_account_id;
  if not found then
    raise exception 'account not found' using errcode = 'KN001';
  end if;
  v_period := kiln_private.period_start(v_account.period_anchor, now());
  -- Used = settled charges plus reservations still in flight this period.
  select coalesce(held_micros + settled_micros, 0) into v_used
    from kiln_private.budget_periods where pool_id = v_account.id and period_start = v_period;
  v_used := coalesce(v_used, 0);

  if p_workspace_id is not null then
    select * into v_ws from kiln_private.workspaces where id = p_workspace_id;
    v_ws_ok := found and v_ws.plan_status = 'active' and exists (
      select 1 from kiln_private.workspace_members
        where workspace_id = p_workspace_id and account_id = p_account_id and left_at is null);
    if v_ws_ok then
      v_ws_period := kiln_private.period_start(v_ws.plan_period_anchor, now());
      select held_micros + settled_micros into v_ws_used
        from kiln_private.budget_periods where pool_id = v_ws.id and period_start = v_ws_period;
      v_ws_used := coalesce(v_ws_used, 0);
    end if;
  end if;

  return json_build_object(
    'tier', v_account.tier,
    'token_budget_micros', v_account.budget_micros,
    'used_micros', v_used,
    'remaining_micros', case when v_account.budget_micros is null then null
                             else greatest(v_account.budget_micros - v_used, 0) end,
    'resets_at', case when v_account.budget_micros is null then null
                      else to_char((v_period + interval '1 month') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') end,
    'scope', case when p_workspace_id is null then 'personal' else 'workspace' end,
    'workspace_id', p_workspace_id,
    'workspace_budget_micros', case when v_ws_ok then v_ws.plan_budget_micros end,
    'workspace_used_micros', case when v_ws_ok then v_ws_used end,
    'workspace_remaining_micros', case when v_ws_ok and v_ws.plan_budget_micros is not null
                                       then greatest(v_ws.plan_budget_micros - v_ws_used, 0) end,
    'workspace_resets_at', case when v_ws_ok then to_char((v_ws_period + interval '1 month') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') end
  );
end;
$$;
comment on function kiln.get_usage(uuid, uuid) is
  'The GET /usage body for an account, and for a workspace-bound key its Team pool (workspace_* null when the plan is not active or the member left).';

--------------------------------------------------------------------------------
-- Catalog.

create view kiln.models as
  select id, name, description, category, provider, upstream, supports_image_input,
         input_modalities, output_modalities, cost, max_output_tokens, markup, enabled, sort_order, updated_at
  from kiln_private.models;
comment on view kiln.models is 'The model catalog (upstream cost; billed price = cost × markup).';

create function kiln.upsert_model(p_model jsonb) returns kiln_private.models
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_model kiln_private.models;
begin
  insert into kiln_private.models as m
    (id, name, description, category, provider, upstream, supports_image_input, input_modalities,
     output_modalities, cost, max_output_tokens, markup, enabled, sort_order)
  values (
    p_model->>'id', p_model->>'name', p_model->>'description', p_model->>'category', p_model->>'provider',
    p_model->'upstream',
    coalesce((p_model->>'supports_image_input')::boolean, false),
    coalesce(array(select jsonb_array_elements_text(p_model->'input_modalities')), array['text']),
    coalesce(array(select jsonb_array_elements_text(p_model->'output_modalities')), array['text']),
    p_model->'cost',
    (p_model->>'maxOutputTokens')::int,
    (p_model->>'markup')::numeric,
    coalesce((p_model->>'enabled')::boolean, true),
    coalesce((p_model->>'sort_order')::int, 100))
  on conflict (id) do update set
    name = excluded.name, description = excluded.description, category = excluded.category,
    provider = excluded.provider, upstream = excluded.upstream,
    supports_image_input = excluded.supports_image_input, input_modalities = excluded.input_modalities,
    output_modalities = excluded.output_modalities, cost = excluded.cost,
    max_output_tokens = excluded.max_output_tokens, markup = excluded.markup,
    enabled = excluded.enabled, sort_order = excluded.sort_order, updated_at = now()
  returning * into v_model;
  return v_model;
exception
  when check_violation or not_null_violation or invalid_text_representation then
    raise exception 'invalid model entry: %', sqlerrm using errcode = 'KI001';
end;
$$;
comment on function kiln.upsert_model(jsonb) is 'Inserts or replaces one catalog entry (validated again in the CLI).';
