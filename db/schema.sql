-- The kiln and kiln_private schemas as the committed migrations leave them (db/migrations/committed/).
-- Generated: do not edit. Regenerate with `npm run db:schema` (`kiln gm commit` also rewrites it);
-- test/db.schema.test.ts fails when this file is stale. Read it to review; migrations are the source.
-- Functions and views are listed here by name; each is defined in its own file under db/functions/
-- and db/views/, where a change is made (docs/development.md).

-- Extensions

create extension if not exists pg_trgm;

create extension if not exists pgcrypto;

-- Schemas

create schema kiln;
comment on schema kiln is 'Functions and views the Kiln service and analysts may use.';

create schema kiln_private;
comment on schema kiln_private is 'Kiln tables; not for direct use by clients.';

-- Types

create type kiln.object_meta as (
  path text,
  owner_id uuid,
  content_type text,
  format text,
  width integer,
  height integer,
  byte_size integer,
  visibility text,
  created_at timestamp with time zone
);

create type kiln.request_auth as (
  status text,
  key_id uuid,
  account_id uuid,
  workspace_id uuid,
  tier text,
  scopes text[],
  retry_after integer
);

-- Tables

create table kiln_private.account_spend (
  account_id uuid not null,
  period_start timestamp with time zone not null,
  period_end timestamp with time zone not null,
  used_micros bigint default 0 not null,
  constraint account_spend_pkey PRIMARY KEY (account_id),
  constraint account_spend_account_id_fkey FOREIGN KEY (account_id) REFERENCES kiln_private.accounts(id) ON DELETE CASCADE,
  constraint account_spend_used_micros_check CHECK ((used_micros >= 0))
);
comment on table kiln_private.account_spend is 'Per account: held + settled of its latest budget period (kiln_private.budget_periods, pool = the account), kept by tg_budget_periods__account_spend; ordered by account_spend_used_idx for the admin accounts page. A row whose period_end has passed counts as 0 (the period rolled without a charge) until kiln.roll_account_spend zeroes it.';
CREATE INDEX account_spend_roll_idx ON kiln_private.account_spend USING btree (period_end) WHERE (used_micros > 0);
CREATE INDEX account_spend_used_idx ON kiln_private.account_spend USING btree (used_micros, account_id) INCLUDE (period_end);

create table kiln_private.accounts (
  id uuid default gen_random_uuid() not null,
  email text not null,
  tier text default 'legacy_free'::text not null,
  budget_micros bigint,
  period_anchor timestamp with time zone default date_trunc('day'::text, now(), 'UTC'::text) not null,
  created_at timestamp with time zone default now() not null,
  parallel_slots integer,
  is_admin boolean default false not null,
  admin_by_group boolean default false not null,
  constraint accounts_pkey PRIMARY KEY (id),
  constraint accounts_tier_fkey FOREIGN KEY (tier) REFERENCES kiln_private.tiers(tier),
  constraint accounts_budget_micros_check CHECK ((budget_micros >= 0)),
  constraint accounts_email_check CHECK (((email ~ '^[^@\s]+@[^@\s]+$'::text) AND (length(email) <= 320))),
  constraint accounts_parallel_slots_check CHECK ((parallel_slots >= 0))
);
comment on column kiln_private.accounts.parallel_slots is 'How many of this account''s generations may be processing at once; null = the tier''s default.';
comment on column kiln_private.accounts.is_admin is 'Set by an operator (kiln user set --admin): the user may use the admin routes.';
comment on column kiln_private.accounts.admin_by_group is 'The user''s last SSO sign-in carried KILN_OIDC_ADMIN_GROUP in its groups claim (refreshed at each sign-in).';
CREATE UNIQUE INDEX accounts_email_key ON kiln_private.accounts USING btree (lower(email));
CREATE INDEX accounts_email_trgm_idx ON kiln_private.accounts USING gin (lower(email) public.gin_trgm_ops);
CREATE TRIGGER tg_accounts__account_spend AFTER INSERT OR UPDATE OF period_anchor ON kiln_private.accounts FOR EACH ROW EXECUTE FUNCTION kiln_private.tg_accounts__account_spend();
CREATE TRIGGER tg_accounts__audit AFTER INSERT OR UPDATE OF tier, budget_micros, parallel_slots, is_admin, admin_by_group, email ON kiln_private.accounts FOR EACH ROW EXECUTE FUNCTION kiln_private.tg_accounts__audit();

create table kiln_private.api_key_grace (
  key_hash bytea not null,
  key_id uuid not null,
  display_prefix text not null,
  expires_at timestamp with time zone not null,
  constraint api_key_grace_pkey PRIMARY KEY (key_hash),
  constraint api_key_grace_key_id_fkey FOREIGN KEY (key_id) REFERENCES kiln_private.api_keys(id),
  constraint api_key_grace_key_hash_check CHECK ((length(key_hash) = 32))
);
comment on table kiln_private.api_key_grace is 'Secrets a rotation replaced, valid under their key''s id until expires_at (the rotation''s grace); a revoked or expired key ends them too.';
CREATE INDEX api_key_grace_key_idx ON kiln_private.api_key_grace USING btree (key_id);

create table kiln_private.api_keys (
  id uuid default gen_random_uuid() not null,
  account_id uuid not null,
  key_hash bytea not null,
  display_prefix text not null,
  scopes text[] not null,
  rpm integer,
  workspace_id uuid,
  name text,
  created_at timestamp with time zone default now() not null,
  revoked_at timestamp with time zone,
  kind text default 'key'::text not null,
  expires_at timestamp with time zone,
  last_used_at timestamp with time zone,
  budget_micros bigint,
  idle_seconds integer,
  rotated_at timestamp with time zone,
  expiry_recorded boolean default false not null,
  require_end_user boolean default false not null,
  constraint api_keys_pkey PRIMARY KEY (id),
  constraint api_keys_key_hash_key UNIQUE (key_hash),
  constraint api_keys_account_id_fkey FOREIGN KEY (account_id) REFERENCES kiln_private.accounts(id),
  constraint api_keys_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES kiln_private.workspaces(id),
  constraint api_keys_budget_micros_check CHECK ((budget_micros >= 0)),
  constraint api_keys_idle_seconds_check CHECK ((idle_seconds > 0)),
  constraint api_keys_key_hash_check CHECK ((length(key_hash) = 32)),
  constraint api_keys_kind_check CHECK ((kind = ANY (ARRAY['key'::text, 'session'::text]))),
  constraint api_keys_name_check CHECK ((length(name) <= 200)),
  constraint api_keys_rpm_check CHECK ((rpm > 0)),
  constraint api_keys_scopes_check CHECK (((scopes <@ ARRAY['read'::text, 'write'::text, 'keys'::text, 'admin'::text]) AND (cardinality(scopes) > 0)))
);
comment on column kiln_private.api_keys.key_hash is 'SHA-256 of the current secret. A rotation moves the previous one to kiln_private.api_key_grace.';
comment on column kiln_private.api_keys.kind is 'key: an API key; session: a console session made by an SSO sign-in (its cookie is the secret; idle_seconds applies).';
comment on column kiln_private.api_keys.last_used_at is 'Last authenticated use, to the minute (written at most once a minute per key).';
comment on column kiln_private.api_keys.budget_micros is 'The key''s own budget per billing period of its scope (null = only the pool''s); kept in kiln_private.key_budget_periods.';
comment on column kiln_private.api_keys.expiry_recorded is 'key.expired has been written to the audit log.';
comment on column kiln_private.api_keys.require_end_user is 'Requests that spend with this key must name an endUser (KI002 otherwise).';
CREATE INDEX api_keys_account_idx ON kiln_private.api_keys USING btree (account_id);
CREATE INDEX api_keys_expiry_idx ON kiln_private.api_keys USING btree (expires_at) WHERE ((expires_at IS NOT NULL) AND (NOT expiry_recorded));
CREATE INDEX api_keys_workspace_idx ON kiln_private.api_keys USING btree (workspace_id) WHERE (workspace_id IS NOT NULL);
CREATE TRIGGER tg_api_keys__audit AFTER INSERT OR UPDATE OF key_hash, revoked_at, scopes, rpm, budget_micros, expires_at, name, workspace_id ON kiln_private.api_keys FOR EACH ROW EXECUTE FUNCTION kiln_private.tg_api_keys__audit();

create table kiln_private.audit_log (
  id uuid default kiln_private.uuid_v7_ordered() not null,
  at timestamp with time zone default now() not null,
  scope_id uuid,
  actor_type text not null,
  actor_id text,
  action text not null,
  target_type text not null,
  target_id text,
  ip inet,
  request_id text,
  details jsonb default '{}'::jsonb not null,
  constraint audit_log_pkey PRIMARY KEY (id),
  constraint audit_log_action_check CHECK ((action ~ '^[a-z_]+\.[a-z_]+$'::text)),
  constraint audit_log_actor_id_check CHECK ((length(actor_id) <= 200)),
  constraint audit_log_actor_type_check CHECK ((actor_type = ANY (ARRAY['key'::text, 'session'::text, 'operator'::text, 'identity'::text]))),
  constraint audit_log_request_id_check CHECK ((length(request_id) <= 200)),
  constraint audit_log_target_id_check CHECK ((length(target_id) <= 400)),
  constraint audit_log_target_type_check CHECK ((target_type ~ '^[a-z_]+$'::text))
);
comment on table kiln_private.audit_log is 'Who changed what, append-only: one row per change to keys, sessions, identity links, webhooks, workflows, accounts, workspaces and the catalog, written in the transaction that makes it. scope_id is the billing scope it belongs to (an account or a workspace; null = the service: the catalog, a refused sign-in). Never holds a secret.';
CREATE INDEX audit_log_at_idx ON kiln_private.audit_log USING btree (at);
CREATE INDEX audit_log_id_idx ON kiln_private.audit_log USING btree (id DESC);
CREATE INDEX audit_log_scope_action_idx ON kiln_private.audit_log USING btree (scope_id, action, id DESC);
CREATE INDEX audit_log_scope_idx ON kiln_private.audit_log USING btree (scope_id, id DESC);
CREATE TRIGGER tg_audit_log__append_only BEFORE DELETE OR UPDATE ON kiln_private.audit_log FOR EACH ROW EXECUTE FUNCTION kiln_private.tg_audit_log__append_only();
CREATE TRIGGER tg_audit_log__no_truncate BEFORE TRUNCATE ON kiln_private.audit_log FOR EACH STATEMENT EXECUTE FUNCTION kiln_private.tg_audit_log__append_only();

create table kiln_private.audit_policy (
  only_row boolean default true not null,
  retention interval,
  set_at timestamp with time zone default now() not null,
  constraint audit_policy_pkey PRIMARY KEY (only_row),
  constraint audit_policy_only_row_check CHECK (only_row),
  constraint audit_policy_retention_check CHECK ((retention > '00:00:00'::interval))
);
comment on table kiln_private.audit_policy is 'The audit log''s retention, set by the owner (`kiln migrate` from KILN_AUDIT_RETENTION): null keeps every entry. One row at most. The service role cannot change it.';

create table kiln_private.batch_turns (
  scope_id uuid not null,
  turn bigint not null,
  constraint batch_turns_pkey PRIMARY KEY (scope_id)
);

create table kiln_private.batches (
  id uuid default kiln_private.uuid_v7() not null,
  account_id uuid not null,
  workspace_id uuid,
  key_id uuid,
  scope_id uuid not null,
  status text default 'in_progress'::text not null,
  total integer not null,
  completed integer default 0 not null,
  failed integer default 0 not null,
  canceled integer default 0 not null,
  next_line integer default 0 not null,
  in_queue integer default 0 not null,
  spent_micros bigint default 0 not null,
  expired boolean default false not null,
  created_at timestamp with time zone default now() not null,
  started_at timestamp with time zone,
  completed_at timestamp with time zone,
  expires_at timestamp with time zone not null,
  updated_at timestamp with time zone default now() not null,
  models jsonb,
  constraint batches_pkey PRIMARY KEY (id),
  constraint batches_account_id_fkey FOREIGN KEY (account_id) REFERENCES kiln_private.accounts(id),
  constraint batches_key_id_fkey FOREIGN KEY (key_id) REFERENCES kiln_private.api_keys(id),
  constraint batches_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES kiln_private.workspaces(id),
  constraint batches_check CHECK (((status = ANY (ARRAY['completed'::text, 'canceled'::text, 'expired'::text])) = (completed_at IS NOT NULL))),
  constraint batches_status_check CHECK ((status = ANY (ARRAY['in_progress'::text, 'completed'::text, 'canceling'::text, 'canceled'::text, 'expired'::text]))),
  constraint batches_total_check CHECK (((total >= 1) AND (total <= 50000)))
);
comment on table kiln_private.batches is 'POST /batches: one row per batch; its lines are kiln_private.generations with batch_id. Counters are kept by kiln_private.tg_generations__batch.';
comment on column kiln_private.batches.models is 'The catalog entries its lines run with (batch-priced), by key: a line''s stored request names its model and fallbacks by these keys (kiln_private.batch_line_request). Null for batches whose lines hold their entries themselves.';
CREATE INDEX batches_account_created_idx ON kiln_private.batches USING btree (account_id, created_at DESC, id DESC);
CREATE INDEX batches_open_idx ON kiln_private.batches USING btree (expires_at) WHERE (status = ANY (ARRAY['in_progress'::text, 'canceling'::text]));

create table kiln_private.budget_periods (
  pool_id uuid not null,
  period_start timestamp with time zone not null,
  held_micros bigint default 0 not null,
  settled_micros bigint default 0 not null,
  constraint budget_periods_pkey PRIMARY KEY (pool_id, period_start),
  constraint budget_periods_held_micros_check CHECK ((held_micros >= 0)),
  constraint budget_periods_settled_micros_check CHECK ((settled_micros >= 0))
);
comment on table kiln_private.budget_periods is 'Running totals per budget pool (an account id or a workspace id) and period; derived from kiln_private.charges in the same transaction.';
CREATE TRIGGER tg_budget_periods__account_spend AFTER INSERT OR UPDATE OF held_micros, settled_micros ON kiln_private.budget_periods FOR EACH ROW EXECUTE FUNCTION kiln_private.tg_budget_periods__account_spend();
CREATE TRIGGER tg_budget_periods__thresholds AFTER INSERT OR UPDATE OF settled_micros ON kiln_private.budget_periods FOR EACH ROW WHEN (new.settled_micros > 0) EXECUTE FUNCTION kiln_private.tg_budget_periods__thresholds();

create table kiln_private.budget_thresholds (
  pool_id uuid not null,
  period_start timestamp with time zone not null,
  threshold integer not null,
  fired_at timestamp with time zone default now() not null,
  constraint budget_thresholds_pkey PRIMARY KEY (pool_id, period_start, threshold),
  constraint budget_thresholds_threshold_check CHECK ((threshold = ANY (ARRAY[50, 80, 100])))
);
comment on table kiln_private.budget_thresholds is 'Budget thresholds already announced (budget.threshold), once per pool, period and threshold.';

create table kiln_private.charge_attribute_days (
  pool_id uuid not null,
  day date not null,
  attribute text collate "C" not null,
  charges bigint default 0 not null,
  settled_charges bigint default 0 not null,
  released_charges bigint default 0 not null,
  spend_micros bigint default 0 not null,
  batch_charges bigint default 0 not null,
  batch_settled_charges bigint default 0 not null,
  batch_released_charges bigint default 0 not null,
  batch_spend_micros bigint default 0 not null,
  constraint charge_attribute_days_pkey PRIMARY KEY (pool_id, day, attribute)
) with (fillfactor=80);
comment on table kiln_private.charge_attribute_days is 'Per budget pool and UTC day, the ended charges that have an attribute: ''endUser'' (an end_user) or ''metadata.<key>'' (that metadata key): the sum of that attribute''s groups, so the day''s total (kiln_private.charge_days) minus it is the group without the attribute.';

create table kiln_private.charge_days (
  pool_id uuid not null,
  period_start timestamp with time zone not null,
  day date not null,
  account_id uuid not null,
  workspace_id uuid,
  key_id uuid,
  model_id text not null,
  origin text not null,
  charges bigint default 0 not null,
  settled_charges bigint default 0 not null,
  released_charges bigint default 0 not null,
  spend_micros bigint default 0 not null,
  batch_charges bigint default 0 not null,
  batch_settled_charges bigint default 0 not null,
  batch_released_charges bigint default 0 not null,
  batch_spend_micros bigint default 0 not null,
  constraint charge_days_account_id_fkey FOREIGN KEY (account_id) REFERENCES kiln_private.accounts(id),
  constraint charge_days_key_id_fkey FOREIGN KEY (key_id) REFERENCES kiln_private.api_keys(id),
  constraint charge_days_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES kiln_private.workspaces(id)
) with (fillfactor=80);
comment on table kiln_private.charge_days is 'Ended charges of kiln_private.charges (settled or released) summed per pool, period, UTC day of creation, account, workspace, key, model and origin; kept by the tg_charges__roll_up* triggers in the transaction that ends (or changes) a charge. Open reservations are not in it: readers add them from kiln_private.charges through charges_open_idx. charges = settled_charges + released_charges; spend_micros = settled amounts.';
comment on column kiln_private.charge_days.batch_spend_micros is 'The part of spend_micros settled by batch lines (charges with batch_id); batch_charges, batch_settled_charges and batch_released_charges are the batch parts of the counts. The rest is interactive.';
CREATE INDEX charge_days_account_day_idx ON kiln_private.charge_days USING btree (account_id, day);
CREATE INDEX charge_days_day_idx ON kiln_private.charge_days USING btree (day);
CREATE UNIQUE INDEX charge_days_key ON kiln_private.charge_days USING btree (pool_id, day, account_id, model_id, origin, key_id, period_start) NULLS NOT DISTINCT;

create table kiln_private.charge_end_user_days (
  pool_id uuid not null,
  day date not null,
  end_user text collate "C" not null,
  workspace_id uuid,
  charges bigint default 0 not null,
  settled_charges bigint default 0 not null,
  released_charges bigint default 0 not null,
  spend_micros bigint default 0 not null,
  batch_charges bigint default 0 not null,
  batch_settled_charges bigint default 0 not null,
  batch_released_charges bigint default 0 not null,
  batch_spend_micros bigint default 0 not null,
  constraint charge_end_user_days_pkey PRIMARY KEY (pool_id, day, end_user)
) with (fillfactor=80);
comment on table kiln_private.charge_end_user_days is 'Ended charges of kiln_private.charges with an end_user, summed per budget pool, UTC day of creation and end user, with the meaning of kiln_private.charge_days'' columns (batch_* the part of batch lines). Kept by kiln_private.roll_up_charges in the transaction that ends a charge; open reservations are read from the ledger.';
CREATE INDEX charge_end_user_days_spend_idx ON kiln_private.charge_end_user_days USING btree (pool_id, day, ((- spend_micros)), end_user) WHERE (settled_charges > 0);

create table kiln_private.charge_end_user_months (
  pool_id uuid not null,
  month date not null,
  end_user text collate "C" not null,
  workspace_id uuid,
  charges bigint default 0 not null,
  settled_charges bigint default 0 not null,
  released_charges bigint default 0 not null,
  spend_micros bigint default 0 not null,
  batch_charges bigint default 0 not null,
  batch_settled_charges bigint default 0 not null,
  batch_released_charges bigint default 0 not null,
  batch_spend_micros bigint default 0 not null,
  constraint charge_end_user_months_pkey PRIMARY KEY (pool_id, month, end_user)
) with (fillfactor=80);
comment on table kiln_private.charge_end_user_months is 'kiln_private.charge_end_user_days summed per calendar month (UTC; month = its first day): the month''s end users of a pool in spend order (charge_end_user_months_spend_idx) for GET /end-users.';
CREATE INDEX charge_end_user_months_spend_idx ON kiln_private.charge_end_user_months USING btree (pool_id, month, ((- spend_micros)), end_user) WHERE (settled_charges > 0);

create table kiln_private.charge_metadata_days (
  pool_id uuid not null,
  day date not null,
  mkey text collate "C" not null,
  mvalue text collate "C" not null,
  workspace_id uuid,
  charges bigint default 0 not null,
  settled_charges bigint default 0 not null,
  released_charges bigint default 0 not null,
  spend_micros bigint default 0 not null,
  batch_charges bigint default 0 not null,
  batch_settled_charges bigint default 0 not null,
  batch_released_charges bigint default 0 not null,
  batch_spend_micros bigint default 0 not null,
  constraint charge_metadata_days_pkey PRIMARY KEY (pool_id, day, mkey, mvalue)
) with (fillfactor=80);
comment on table kiln_private.charge_metadata_days is 'Ended charges of kiln_private.charges per budget pool, UTC day and metadata pair (mkey, mvalue): each charge counts once under each of its pairs. Same columns and upkeep as kiln_private.charge_end_user_days.';
CREATE INDEX charge_metadata_days_spend_idx ON kiln_private.charge_metadata_days USING btree (pool_id, mkey, day, ((- spend_micros)), mvalue) WHERE (settled_charges > 0);

create table kiln_private.charges (
  id uuid default kiln_private.uuid_v7() not null,
  account_id uuid not null,
  workspace_id uuid,
  pool_id uuid not null,
  period_start timestamp with time zone not null,
  key_id uuid,
  model_id text not null,
  origin text not null,
  generation_id uuid,
  workflow_run_id uuid,
  node_id text,
  status text default 'reserved'::text not null,
  reserved_micros bigint not null,
  settled_micros bigint,
  created_at timestamp with time zone default now() not null,
  finished_at timestamp with time zone,
  key_pool boolean default false not null,
  batch_id uuid,
  end_user text,
  metadata jsonb,
  end_user_period timestamp with time zone,
  constraint charges_pkey PRIMARY KEY (id),
  constraint charges_account_id_fkey FOREIGN KEY (account_id) REFERENCES kiln_private.accounts(id),
  constraint charges_batch_id_fkey FOREIGN KEY (batch_id) REFERENCES kiln_private.batches(id),
  constraint charges_key_id_fkey FOREIGN KEY (key_id) REFERENCES kiln_private.api_keys(id),
  constraint charges_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES kiln_private.workspaces(id),
  constraint charges_check CHECK (((settled_micros >= 0) AND (settled_micros <= reserved_micros))),
  constraint charges_check1 CHECK (((status = 'settled'::text) = (settled_micros IS NOT NULL))),
  constraint charges_origin_check CHECK ((origin = ANY (ARRAY['api'::text, 'mcp'::text, 'app'::text, 'workflow'::text]))),
  constraint charges_reserved_micros_check CHECK ((reserved_micros >= 0)),
  constraint charges_status_check CHECK ((status = ANY (ARRAY['reserved'::text, 'settled'::text, 'released'::text])))
);
comment on column kiln_private.charges.key_pool is 'The reservation is also held on its key''s own budget (kiln_private.key_budget_periods).';
comment on column kiln_private.charges.batch_id is 'The batch whose line this charge bills (set when the line reserves: kiln.reserve_generation); null for every other charge.';
comment on column kiln_private.charges.end_user is 'The end user of the generation this charge bills (kiln_private.generations.end_user).';
comment on column kiln_private.charges.metadata is 'The metadata of the generation this charge bills (kiln_private.generations.metadata).';
comment on column kiln_private.charges.end_user_period is 'The reservation is also held on its end user''s cap: the period_start of its row in kiln_private.end_user_budget_periods (null = no cap held).';
CREATE INDEX charges_account_created_idx ON kiln_private.charges USING btree (account_id, created_at);
CREATE INDEX charges_batch_idx ON kiln_private.charges USING btree (batch_id) WHERE (batch_id IS NOT NULL);
CREATE INDEX charges_end_user_idx ON kiln_private.charges USING btree (pool_id, end_user, created_at) WHERE (end_user IS NOT NULL);
CREATE INDEX charges_generation_idx ON kiln_private.charges USING btree (generation_id) WHERE (generation_id IS NOT NULL);
CREATE INDEX charges_key_idx ON kiln_private.charges USING btree (key_id) WHERE (key_id IS NOT NULL);
CREATE INDEX charges_open_idx ON kiln_private.charges USING btree (pool_id, created_at) WHERE (status = 'reserved'::text);
CREATE UNIQUE INDEX charges_workflow_output_key ON kiln_private.charges USING btree (workflow_run_id, node_id) WHERE (workflow_run_id IS NOT NULL);
CREATE TRIGGER tg_charges__roll_up_delete AFTER DELETE ON kiln_private.charges REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION kiln_private.tg_charges__roll_up();
CREATE TRIGGER tg_charges__roll_up_insert_ended AFTER INSERT ON kiln_private.charges FOR EACH ROW WHEN (new.status <> 'reserved'::text) EXECUTE FUNCTION kiln_private.tg_charges__roll_up();
CREATE TRIGGER tg_charges__roll_up_update AFTER UPDATE ON kiln_private.charges REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION kiln_private.tg_charges__roll_up();

create table kiln_private.end_user_budget_periods (
  pool_id uuid not null,
  end_user text not null,
  period_start timestamp with time zone not null,
  held_micros bigint default 0 not null,
  settled_micros bigint default 0 not null,
  constraint end_user_budget_periods_pkey PRIMARY KEY (pool_id, end_user, period_start),
  constraint end_user_budget_periods_held_micros_check CHECK ((held_micros >= 0)),
  constraint end_user_budget_periods_settled_micros_check CHECK ((settled_micros >= 0))
) with (fillfactor=50);
comment on table kiln_private.end_user_budget_periods is 'Running totals of end users with a cap, per period (a UTC day or a calendar month, as the cap says); debited in the same statement as the pool (kiln_private.reserve_budgets) and ended with it (settle_charge, release_charge, through charges.end_user_period).';

create table kiln_private.end_user_budgets (
  pool_id uuid not null,
  end_user text not null,
  budget_micros bigint not null,
  period text not null,
  rpm integer,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  constraint end_user_budgets_pkey PRIMARY KEY (pool_id, end_user),
  constraint end_user_budgets_budget_micros_check CHECK ((budget_micros >= 0)),
  constraint end_user_budgets_end_user_check CHECK (((char_length(end_user) >= 1) AND (char_length(end_user) <= 128))),
  constraint end_user_budgets_period_check CHECK ((period = ANY (ARRAY['day'::text, 'month'::text]))),
  constraint end_user_budgets_rpm_check CHECK ((rpm >= 1))
);
comment on table kiln_private.end_user_budgets is 'PUT /end-users/{endUser}: an end user''s cap in a billing scope (pool_id: the account, or the workspace for workspace-bound calls), per UTC day or calendar month (UTC), and its optional rpm (GCRA bucket "end_user:<pool>:<end user>"). Enforced by kiln_private.reserve_budgets and kiln_private.insert_generations; changes are audited (end_user.budget_set, end_user.budget_removed).';
CREATE TRIGGER tg_end_user_budgets__audit AFTER INSERT OR DELETE OR UPDATE ON kiln_private.end_user_budgets FOR EACH ROW EXECUTE FUNCTION kiln_private.tg_end_user_budgets__audit();

create table kiln_private.events (
  id bigint generated always as identity not null,
  tx xid8 default pg_current_xact_id() not null,
  scope_id uuid not null,
  type text not null,
  subject_id uuid,
  occurred_at timestamp with time zone default clock_timestamp() not null,
  data json not null,
  body text,
  constraint events_pkey PRIMARY KEY (id)
);
comment on table kiln_private.events is 'The outbox: one row per event a client may care about, written in the transaction of the change it reports.';
CREATE INDEX events_occurred_at_idx ON kiln_private.events USING btree (occurred_at);
CREATE INDEX events_scope_tx_idx ON kiln_private.events USING btree (scope_id, tx, id);

create table kiln_private.expired_objects (
  path text not null,
  owner_id uuid,
  visibility text not null,
  expired_at timestamp with time zone default now() not null,
  constraint expired_objects_pkey PRIMARY KEY (path),
  constraint expired_objects_owner_id_fkey FOREIGN KEY (owner_id) REFERENCES kiln_private.accounts(id),
  constraint expired_objects_visibility_check CHECK ((visibility = ANY (ARRAY['private'::text, 'public'::text])))
);
comment on table kiln_private.expired_objects is 'Paths removed by retention, so their old URLs answer 410 gone instead of 404.';

create unlogged table kiln_private.generation_streams (
  generation_id uuid not null,
  account_id uuid not null,
  run_id uuid,
  session integer default 1 not null,
  cut boolean default false not null,
  text text default ''::text not null,
  chars integer default 0 not null,
  preview_index integer,
  preview_path text,
  preview_type text,
  preview_paths text[] default '{}'::text[] not null,
  progress_seq integer default 0 not null,
  progress_percent smallint,
  progress_message text,
  updated_at timestamp with time zone default now() not null,
  constraint generation_streams_pkey PRIMARY KEY (generation_id)
) with (fillfactor=50);
CREATE INDEX generation_streams_run_id ON kiln_private.generation_streams USING btree (run_id) WHERE (run_id IS NOT NULL);

create table kiln_private.generation_tags (
  generation_id uuid not null,
  account_id uuid not null,
  pool_id uuid not null,
  origin text not null,
  mkey text not null,
  mvalue text not null,
  created_at timestamp with time zone not null,
  constraint generation_tags_pkey PRIMARY KEY (generation_id, mkey),
  constraint generation_tags_generation_id_fkey FOREIGN KEY (generation_id) REFERENCES kiln_private.generations(id) ON DELETE CASCADE
);
comment on table kiln_private.generation_tags is 'One row per metadata pair of a generation (kiln_private.tg_generations__tags), for GET /generations?metadata[k]=v in keyset order (generation_tags_list_idx).';
CREATE INDEX generation_tags_list_idx ON kiln_private.generation_tags USING btree (account_id, pool_id, origin, mkey, mvalue, created_at, generation_id);

create table kiln_private.generations (
  id uuid not null,
  account_id uuid not null,
  key_id uuid,
  workspace_id uuid,
  origin text not null,
  model_id text not null,
  type text not null,
  request jsonb not null,
  status text default 'pending'::text not null,
  result jsonb,
  error text,
  last_error text,
  reserved_micros bigint not null,
  cost_micros bigint,
  charge_id uuid,
  provider_request_id text,
  attempts integer default 0 not null,
  max_attempts integer not null,
  waiting boolean default false not null,
  worker_id text,
  job_id bigint,
  created_at timestamp with time zone default now() not null,
  started_at timestamp with time zone,
  finished_at timestamp with time zone,
  updated_at timestamp with time zone default now() not null,
  run_id uuid,
  output_node_id text,
  crashes integer default 0 not null,
  crash_streak integer default 0 not null,
  batch_id uuid,
  batch_line integer,
  custom_id text,
  end_user text,
  metadata jsonb,
  constraint generations_pkey PRIMARY KEY (id),
  constraint generations_account_id_fkey FOREIGN KEY (account_id) REFERENCES kiln_private.accounts(id),
  constraint generations_batch_id_fkey FOREIGN KEY (batch_id) REFERENCES kiln_private.batches(id),
  constraint generations_charge_id_fkey FOREIGN KEY (charge_id) REFERENCES kiln_private.charges(id),
  constraint generations_key_id_fkey FOREIGN KEY (key_id) REFERENCES kiln_private.api_keys(id),
  constraint generations_run_id_fkey FOREIGN KEY (run_id) REFERENCES kiln_private.workflow_runs(id),
  constraint generations_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES kiln_private.workspaces(id),
  constraint generations_charge_check CHECK (((charge_id IS NOT NULL) OR (run_id IS NOT NULL) OR (batch_id IS NOT NULL))),
  constraint generations_check CHECK (((status = ANY (ARRAY['completed'::text, 'failed'::text])) = (finished_at IS NOT NULL))),
  constraint generations_check1 CHECK (((status <> 'completed'::text) OR ((result IS NOT NULL) AND (cost_micros IS NOT NULL)))),
  constraint generations_check2 CHECK (((status <> 'failed'::text) OR (error IS NOT NULL))),
  constraint generations_cost_micros_check CHECK ((cost_micros >= 0)),
  constraint generations_max_attempts_check CHECK (((max_attempts >= 1) AND (max_attempts <= 100))),
  constraint generations_origin_check CHECK ((origin = ANY (ARRAY['api'::text, 'mcp'::text, 'app'::text, 'workflow'::text]))),
  constraint generations_reserved_micros_check CHECK ((reserved_micros >= 0)),
  constraint generations_run_check CHECK ((((run_id IS NULL) = (output_node_id IS NULL)) AND ((run_id IS NULL) OR (origin = 'workflow'::text)))),
  constraint generations_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'processing'::text, 'completed'::text, 'failed'::text]))),
  constraint generations_type_check CHECK ((type = ANY (ARRAY['image'::text, 'code'::text])))
);
comment on table kiln_private.generations is 'Generation jobs: request, state, result, cost and the charge that bills them.';
comment on column kiln_private.generations.attempts is 'Executions that ran to an end (the provider answered, failed or timed out), counted against max_attempts. An execution cut off by a crash or a shutdown does not count.';
comment on column kiln_private.generations.run_id is 'For origin workflow: the run this generation is an output of.';
comment on column kiln_private.generations.output_node_id is 'For origin workflow: the output node (of the run''s snapshot) it produces.';
comment on column kiln_private.generations.crashes is 'Executions cut off because the worker running them died (a crash, a kill, a lost database session) and taken over by another.';
comment on column kiln_private.generations.crash_streak is 'Crashes since the last execution that ran to an end; KILN_GENERATION_MAX_CRASHES in a row fail the generation.';
comment on column kiln_private.generations.end_user is 'The request''s endUser (the app''s own user id), or for a run output its run''s; null when not given. Never changed.';
comment on column kiln_private.generations.metadata is 'The request''s metadata (at most 16 string pairs), or for a run output its run''s; null when not given. Never changed.';
CREATE INDEX generations_active_idx ON kiln_private.generations USING btree (account_id, status, created_at) WHERE (status = ANY (ARRAY['pending'::text, 'processing'::text]));
CREATE UNIQUE INDEX generations_batch_line_key ON kiln_private.generations USING btree (batch_id, batch_line) WHERE (batch_id IS NOT NULL);
CREATE INDEX generations_batch_list_idx ON kiln_private.generations USING btree (batch_id, created_at, batch_line) WHERE (batch_id IS NOT NULL);
CREATE INDEX generations_created_brin ON kiln_private.generations USING brin (created_at) WITH (autosummarize='on');
CREATE INDEX generations_end_user_list_idx ON kiln_private.generations USING btree (account_id, COALESCE(workspace_id, account_id), origin, end_user, type, status, created_at, id) WHERE (end_user IS NOT NULL);
CREATE INDEX generations_list_idx ON kiln_private.generations USING btree (account_id, COALESCE(workspace_id, account_id), origin, type, status, created_at, id);
CREATE INDEX generations_list_model_idx ON kiln_private.generations USING btree (account_id, COALESCE(workspace_id, account_id), origin, model_id, type, status, created_at, id);
CREATE UNIQUE INDEX generations_run_output_key ON kiln_private.generations USING btree (run_id, output_node_id) WHERE (run_id IS NOT NULL);
CREATE INDEX generations_waiting_idx ON kiln_private.generations USING btree (account_id, created_at) WHERE (waiting AND (status = 'pending'::text));
CREATE TRIGGER tg_generations__batch AFTER UPDATE OF status ON kiln_private.generations FOR EACH ROW WHEN (old.status IS DISTINCT FROM new.status AND new.batch_id IS NOT NULL) EXECUTE FUNCTION kiln_private.tg_generations__batch();
CREATE TRIGGER tg_generations__drop_held AFTER UPDATE OF status ON kiln_private.generations FOR EACH ROW WHEN (old.status IS DISTINCT FROM new.status AND (new.status = ANY (ARRAY['completed'::text, 'failed'::text]))) EXECUTE FUNCTION kiln_private.tg_generations__drop_held();
CREATE TRIGGER tg_generations__notify AFTER UPDATE OF status ON kiln_private.generations FOR EACH ROW WHEN (old.status IS DISTINCT FROM new.status) EXECUTE FUNCTION kiln_private.tg_generations__notify();
CREATE TRIGGER tg_generations__outbox AFTER UPDATE OF status ON kiln_private.generations FOR EACH ROW WHEN (old.status IS DISTINCT FROM new.status AND (new.status = ANY (ARRAY['completed'::text, 'failed'::text])) AND new.run_id IS NULL AND new.batch_id IS NULL) EXECUTE FUNCTION kiln_private.tg_generations__outbox();
CREATE TRIGGER tg_generations__tags AFTER INSERT ON kiln_private.generations REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION kiln_private.tg_generations__tags();

create table kiln_private.held_outputs (
  generation_id uuid not null,
  data bytea not null,
  result jsonb not null,
  format text not null,
  cost_micros bigint not null,
  provider_request_id text,
  model_id text not null,
  store_failing_since timestamp with time zone default now() not null,
  store_failures integer default 1 not null,
  last_error text,
  updated_at timestamp with time zone default now() not null,
  constraint held_outputs_pkey PRIMARY KEY (generation_id),
  constraint held_outputs_generation_id_fkey FOREIGN KEY (generation_id) REFERENCES kiln_private.generations(id) ON DELETE CASCADE,
  constraint held_outputs_cost_micros_check CHECK ((cost_micros >= 0))
);
comment on table kiln_private.held_outputs is 'An image generation''s output from its provider, held while the object store could not take it (docs/storage.md, "When the store is down"): retries store these bytes instead of calling the provider again. Dropped when the generation ends (completed, or failed past KILN_STORE_OUTAGE_GRACE, or canceled).';

create table kiln_private.idempotency_keys (
  account_id uuid not null,
  operation text not null,
  key text not null,
  fingerprint bytea not null,
  response_status smallint,
  response_body jsonb,
  created_at timestamp with time zone default now() not null,
  expires_at timestamp with time zone not null,
  constraint idempotency_keys_pkey PRIMARY KEY (account_id, operation, key),
  constraint idempotency_keys_fingerprint_check CHECK ((length(fingerprint) = 32)),
  constraint idempotency_keys_key_check CHECK (((char_length(key) >= 1) AND (char_length(key) <= 255)))
);
comment on table kiln_private.idempotency_keys is 'Idempotency-Key records: per account and operation, the fingerprint of the first accepted request and the response it got, until expires_at.';
CREATE INDEX idempotency_keys_expires_idx ON kiln_private.idempotency_keys USING btree (expires_at);

create table kiln_private.identities (
  issuer text not null,
  subject text not null,
  account_id uuid not null,
  email text,
  workspace_id uuid,
  created_at timestamp with time zone default now() not null,
  last_seen_at timestamp with time zone,
  constraint identities_pkey PRIMARY KEY (issuer, subject),
  constraint identities_account_id_fkey FOREIGN KEY (account_id) REFERENCES kiln_private.accounts(id) ON DELETE CASCADE,
  constraint identities_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES kiln_private.workspaces(id),
  constraint identities_email_check CHECK ((length(email) <= 320)),
  constraint identities_issuer_check CHECK (((length(issuer) >= 1) AND (length(issuer) <= 2048))),
  constraint identities_subject_check CHECK (((length(subject) >= 1) AND (length(subject) <= 255)))
);
comment on table kiln_private.identities is 'OpenID Connect identities (issuer + subject) allowed to act as a Kiln account on the MCP endpoint, with an optional Team workspace to bill.';
CREATE INDEX identities_account_idx ON kiln_private.identities USING btree (account_id);
CREATE TRIGGER tg_identities__audit AFTER INSERT OR DELETE OR UPDATE OF account_id, workspace_id ON kiln_private.identities FOR EACH ROW EXECUTE FUNCTION kiln_private.tg_identities__audit();

create table kiln_private.key_budget_periods (
  key_id uuid not null,
  period_start timestamp with time zone not null,
  held_micros bigint default 0 not null,
  settled_micros bigint default 0 not null,
  constraint key_budget_periods_pkey PRIMARY KEY (key_id, period_start),
  constraint key_budget_periods_key_id_fkey FOREIGN KEY (key_id) REFERENCES kiln_private.api_keys(id),
  constraint key_budget_periods_held_micros_check CHECK ((held_micros >= 0)),
  constraint key_budget_periods_settled_micros_check CHECK ((settled_micros >= 0))
);
comment on table kiln_private.key_budget_periods is 'Running totals of keys with their own budget, per period of the key''s scope; debited in the same statement as the pool (kiln_private.reserve_budgets) and ended with it (settle_charge, release_charge).';

create table kiln_private.models (
  id text not null,
  name text not null,
  description text,
  category text not null,
  provider text not null,
  upstream jsonb,
  supports_image_input boolean default false not null,
  input_modalities text[] default ARRAY['text'::text] not null,
  output_modalities text[] default ARRAY['text'::text] not null,
  cost jsonb,
  max_output_tokens integer,
  markup numeric,
  enabled boolean default true not null,
  sort_order integer default 100 not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  fallbacks text[] default '{}'::text[] not null,
  batch_markup numeric,
  constraint models_pkey PRIMARY KEY (id),
  constraint models_batch_markup_check CHECK (((batch_markup >= (1)::numeric) AND ((markup IS NULL) OR (batch_markup <= markup)))),
  constraint models_category_check CHECK ((category = ANY (ARRAY['image'::text, 'text'::text, 'svg'::text]))),
  constraint models_fallbacks_check CHECK (((cardinality(fallbacks) <= 5) AND (NOT (id = ANY (fallbacks))))),
  constraint models_id_check CHECK ((id ~ '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$'::text)),
  constraint models_markup_check CHECK ((markup >= (1)::numeric)),
  constraint models_max_output_tokens_check CHECK ((max_output_tokens > 0)),
  constraint models_provider_check CHECK ((provider = ANY (ARRAY['local'::text, 'openai'::text, 'fal'::text, 'replicate'::text, 'anthropic'::text, 'gemini'::text])))
);
comment on column kiln_private.models.fallbacks is 'Catalog ids tried in order when this entry''s upstream fails after its retries (429, 5xx, timeout, network); same category. Content errors do not fall back.';
comment on column kiln_private.models.batch_markup is 'What batch lines (POST /batches) bill at instead of markup: at least 1, at most markup; null = markup.';
CREATE TRIGGER tg_models__audit AFTER INSERT OR DELETE OR UPDATE ON kiln_private.models FOR EACH ROW EXECUTE FUNCTION kiln_private.tg_models__audit();

create table kiln_private.object_intents (
  location text not null,
  created_at timestamp with time zone default now() not null,
  claimed_at timestamp with time zone,
  constraint object_intents_pkey PRIMARY KEY (location),
  constraint object_intents_location_check CHECK (((length(location) >= 1) AND (length(location) <= 1024)))
);
comment on table kiln_private.object_intents is 'Bucket keys that may hold bytes no object row references: noted before a write and when a row gives a key up; the sweep deletes those still unreferenced after a grace period. A row may only reference a key whose note is unclaimed, so a write slower than the grace fails instead of leaving a row without bytes.';
CREATE INDEX object_intents_created_idx ON kiln_private.object_intents USING btree (created_at);

create table kiln_private.objects (
  path text not null,
  bucket text default 'workflow-images'::text not null,
  owner_id uuid,
  data bytea,
  content_type text not null,
  format text not null,
  width integer not null,
  height integer not null,
  byte_size integer not null,
  visibility text not null,
  created_at timestamp with time zone default now() not null,
  backend text default 'postgres'::text not null,
  location text,
  sha256 bytea,
  constraint objects_pkey PRIMARY KEY (path),
  constraint objects_owner_id_fkey FOREIGN KEY (owner_id) REFERENCES kiln_private.accounts(id),
  constraint objects_backend_check CHECK ((((backend = 'postgres'::text) AND (data IS NOT NULL) AND (location IS NULL)) OR ((backend = 's3'::text) AND (data IS NULL) AND (location IS NOT NULL) AND ((length(location) >= 1) AND (length(location) <= 1024))))),
  constraint objects_bucket_check CHECK ((bucket = 'workflow-images'::text)),
  constraint objects_byte_size_check CHECK ((byte_size >= 0)),
  constraint objects_check CHECK (((owner_id IS NULL) = (path ~~ 'seed/%'::text))),
  constraint objects_check1 CHECK (((owner_id IS NULL) OR (path ~~ ((owner_id)::text || '/%'::text)))),
  constraint objects_content_type_check CHECK ((content_type ~ '^image/[a-z0-9.+-]+$'::text)),
  constraint objects_format_check CHECK ((format = ANY (ARRAY['png'::text, 'jpeg'::text, 'webp'::text, 'avif'::text, 'gif'::text]))),
  constraint objects_height_check CHECK ((height > 0)),
  constraint objects_path_check CHECK (((length(path) <= 300) AND (path ~ '^(seed|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(/[A-Za-z0-9][A-Za-z0-9_-]*)*/[A-Za-z0-9][A-Za-z0-9_.-]*$'::text) AND (path !~ '\.\.'::text))),
  constraint objects_sha256_check CHECK (((sha256 IS NULL) OR (length(sha256) = 32))),
  constraint objects_visibility_check CHECK ((visibility = ANY (ARRAY['private'::text, 'public'::text]))),
  constraint objects_width_check CHECK ((width > 0))
);
comment on table kiln_private.objects is 'The workflow-images store: image bytes and metadata by bucket-relative path.';
comment on column kiln_private.objects.backend is 'Where the bytes are: postgres (in data) or s3 (under location in the configured bucket). Switched object by object by kiln store migrate.';
comment on column kiln_private.objects.location is 'The bucket key holding the bytes (backend s3); unique per write, so a retried write never overwrites committed bytes.';
comment on column kiln_private.objects.sha256 is 'SHA-256 of the bytes (null for rows stored before issue 19); store migrate checks copies against it.';
CREATE INDEX objects_backend_idx ON kiln_private.objects USING btree (backend, path);
CREATE INDEX objects_expiry_idx ON kiln_private.objects USING btree (created_at) WHERE (owner_id IS NOT NULL);
CREATE UNIQUE INDEX objects_location_idx ON kiln_private.objects USING btree (location) WHERE (location IS NOT NULL);
CREATE INDEX objects_owner_idx ON kiln_private.objects USING btree (owner_id, created_at) WHERE (owner_id IS NOT NULL);

create table kiln_private.rate_limit_buckets (
  key text not null,
  tat timestamp with time zone not null,
  constraint rate_limit_buckets_pkey PRIMARY KEY (key)
) with (fillfactor=50);
comment on table kiln_private.rate_limit_buckets is 'GCRA state: theoretical arrival time per bucket ("read:<key id>", "key:<key id>", "transform:<account id>").';

create table kiln_private.secrets (
  name text not null,
  value bytea not null,
  created_at timestamp with time zone default now() not null,
  constraint secrets_pkey PRIMARY KEY (name),
  constraint secrets_value_check CHECK ((length(value) >= 32))
);
comment on table kiln_private.secrets is 'Secrets generated once and shared by every Kiln process.';

create table kiln_private.sign_in_states (
  state_hash bytea not null,
  expires_at timestamp with time zone not null,
  constraint sign_in_states_pkey PRIMARY KEY (state_hash),
  constraint sign_in_states_state_hash_check CHECK ((length(state_hash) = 32))
);
comment on table kiln_private.sign_in_states is 'SSO sign-in transactions already completed (SHA-256 of their state), kept until the transaction would have expired anyway: a transaction cookie works once.';
CREATE INDEX sign_in_states_expires_idx ON kiln_private.sign_in_states USING btree (expires_at);

create table kiln_private.tiers (
  tier text not null,
  default_budget_micros bigint,
  parallel_slots integer not null,
  constraint tiers_pkey PRIMARY KEY (tier),
  constraint tiers_default_budget_micros_check CHECK ((default_budget_micros >= 0)),
  constraint tiers_parallel_slots_check CHECK ((parallel_slots >= 0)),
  constraint tiers_tier_check CHECK ((tier = ANY (ARRAY['legacy_free'::text, 'pro'::text, 'enterprise'::text, 'blocked'::text])))
);
comment on table kiln_private.tiers is 'Per-tier defaults: personal budget per period for new accounts (null = unlimited) and how many generations may be processing at once.';

create table kiln_private.upstream_health (
  model_id text not null,
  consecutive_failures integer default 0 not null,
  skipped_until timestamp with time zone,
  trial_until timestamp with time zone,
  last_error text,
  last_error_at timestamp with time zone,
  last_success_at timestamp with time zone,
  updated_at timestamp with time zone default now() not null,
  constraint upstream_health_pkey PRIMARY KEY (model_id),
  constraint upstream_health_model_id_fkey FOREIGN KEY (model_id) REFERENCES kiln_private.models(id) ON UPDATE CASCADE ON DELETE CASCADE,
  constraint upstream_health_consecutive_failures_check CHECK ((consecutive_failures >= 0))
);
comment on table kiln_private.upstream_health is 'Circuit breaker per catalog entry, shared by every worker: after enough consecutive failed calls the entry is skipped (its fallback taken at once) until skipped_until; then one trial call (trial_until is its lease) decides.';

create table kiln_private.upstream_minutes (
  model_id text not null,
  minute timestamp with time zone not null,
  successes integer default 0 not null,
  failures integer default 0 not null,
  constraint upstream_minutes_pkey PRIMARY KEY (model_id, minute),
  constraint upstream_minutes_model_id_fkey FOREIGN KEY (model_id) REFERENCES kiln_private.models(id) ON UPDATE CASCADE ON DELETE CASCADE
);
comment on table kiln_private.upstream_minutes is 'Upstream calls per catalog entry and minute (the last hour is kept): the recent error rate of kiln.provider_health.';

create table kiln_private.webhook_attempts (
  delivery_id uuid not null,
  at timestamp with time zone default clock_timestamp() not null,
  status_code integer,
  duration_ms integer not null,
  error_class text,
  constraint webhook_attempts_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES kiln_private.webhook_deliveries(id) ON DELETE CASCADE,
  constraint webhook_attempts_error_class_check CHECK ((error_class = ANY (ARRAY['timeout'::text, 'refused'::text, 'tls'::text, 'redirect'::text, 'status'::text])))
);
comment on table kiln_private.webhook_attempts is 'The attempt log: status code, duration and error class of every delivery attempt. Never a response body.';
CREATE INDEX webhook_attempts_delivery_idx ON kiln_private.webhook_attempts USING btree (delivery_id, at);

create table kiln_private.webhook_deliveries (
  id uuid default gen_random_uuid() not null,
  endpoint_id uuid not null,
  event_id bigint not null,
  status text default 'pending'::text not null,
  attempts integer default 0 not null,
  tries integer default 0 not null,
  round integer default 0 not null,
  last_status_code integer,
  last_error text,
  created_at timestamp with time zone default clock_timestamp() not null,
  delivered_at timestamp with time zone,
  failed_at timestamp with time zone,
  next_attempt_at timestamp with time zone default clock_timestamp(),
  constraint webhook_deliveries_pkey PRIMARY KEY (id),
  constraint webhook_deliveries_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES kiln_private.webhook_endpoints(id) ON DELETE CASCADE,
  constraint webhook_deliveries_event_id_fkey FOREIGN KEY (event_id) REFERENCES kiln_private.events(id),
  constraint webhook_deliveries_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'delivered'::text, 'failed'::text])))
);
comment on table kiln_private.webhook_deliveries is 'One message per (event, endpoint): status, attempts and the next attempt. Its webhook-id is the event''s (msg_<event id>), the same at every endpoint.';
CREATE INDEX webhook_deliveries_endpoint_idx ON kiln_private.webhook_deliveries USING btree (endpoint_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_event_idx ON kiln_private.webhook_deliveries USING btree (event_id);
CREATE INDEX webhook_deliveries_failed_idx ON kiln_private.webhook_deliveries USING btree (endpoint_id, failed_at) WHERE (status = 'failed'::text);
CREATE INDEX webhook_deliveries_pending_idx ON kiln_private.webhook_deliveries USING btree (endpoint_id) WHERE (status = 'pending'::text);

create table kiln_private.webhook_endpoints (
  id uuid default gen_random_uuid() not null,
  scope_id uuid not null,
  account_id uuid not null,
  workspace_id uuid,
  url text not null,
  events text[],
  description text,
  enabled boolean default true not null,
  disabled_reason text,
  secret_enc bytea not null,
  old_secret_enc bytea,
  old_secret_until timestamp with time zone,
  failing_since timestamp with time zone,
  last_success_at timestamp with time zone,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  constraint webhook_endpoints_pkey PRIMARY KEY (id),
  constraint webhook_endpoints_account_id_fkey FOREIGN KEY (account_id) REFERENCES kiln_private.accounts(id),
  constraint webhook_endpoints_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES kiln_private.workspaces(id),
  constraint webhook_endpoints_check CHECK ((scope_id = COALESCE(workspace_id, account_id))),
  constraint webhook_endpoints_description_check CHECK ((length(description) <= 500)),
  constraint webhook_endpoints_url_check CHECK (((length(url) >= 1) AND (length(url) <= 2048)))
);
comment on table kiln_private.webhook_endpoints is 'Webhook endpoints of a billing scope (an account, or a workspace): URL, event filter, encrypted signing secret(s), enabled state.';
CREATE INDEX webhook_endpoints_scope_idx ON kiln_private.webhook_endpoints USING btree (scope_id, created_at);
CREATE TRIGGER tg_webhook_endpoints__audit AFTER INSERT OR DELETE OR UPDATE OF url, events, description, enabled, secret_enc ON kiln_private.webhook_endpoints FOR EACH ROW EXECUTE FUNCTION kiln_private.tg_webhook_endpoints__audit();

create table kiln_private.worker_heartbeats (
  worker_id text not null,
  hostname text,
  pid integer,
  started_at timestamp with time zone default now() not null,
  last_seen timestamp with time zone default now() not null,
  lease_key integer,
  pool_id text,
  backend_pid integer,
  constraint worker_heartbeats_pkey PRIMARY KEY (worker_id),
  constraint worker_heartbeats_lease_key_key UNIQUE (lease_key),
  constraint worker_heartbeats_pool_id_key UNIQUE (pool_id),
  constraint worker_heartbeats_lease_key_check CHECK ((lease_key > 0))
);
comment on table kiln_private.worker_heartbeats is 'Liveness of graphile-worker pools (worker_id = the pool id jobs are locked by).';
comment on column kiln_private.worker_heartbeats.lease_key is 'Key of the session-level advisory lock (pg_advisory_lock(1263094862, lease_key)) the worker process holds while alive; null for workers registered before leases.';
comment on column kiln_private.worker_heartbeats.pool_id is 'The graphile-worker pool id the process''s jobs are locked_by (set once its pool exists).';
comment on column kiln_private.worker_heartbeats.backend_pid is 'The Postgres backend (pg_stat_activity.pid) of the worker''s lease session.';

create table kiln_private.workflow_run_outputs (
  run_id uuid not null,
  output_node_id text not null,
  prompt_node_id text not null,
  account_id uuid not null,
  ordinal integer not null,
  type text not null,
  spec jsonb not null,
  refs text[] default '{}'::text[] not null,
  pending_deps integer not null,
  dependents text[] default '{}'::text[] not null,
  status text not null,
  cost_micros bigint,
  result jsonb,
  error text,
  started_at timestamp with time zone,
  finished_at timestamp with time zone,
  updated_at timestamp with time zone default now() not null,
  generation_id uuid,
  constraint workflow_run_outputs_pkey PRIMARY KEY (run_id, output_node_id),
  constraint workflow_run_outputs_generation_id_key UNIQUE (generation_id),
  constraint workflow_run_outputs_account_id_fkey FOREIGN KEY (account_id) REFERENCES kiln_private.accounts(id),
  constraint workflow_run_outputs_generation_id_fkey FOREIGN KEY (generation_id) REFERENCES kiln_private.generations(id),
  constraint workflow_run_outputs_run_id_fkey FOREIGN KEY (run_id) REFERENCES kiln_private.workflow_runs(id) ON DELETE CASCADE,
  constraint workflow_run_outputs_check CHECK (((status = ANY (ARRAY['completed'::text, 'failed'::text, 'skipped'::text, 'abandoned'::text])) = (finished_at IS NOT NULL))),
  constraint workflow_run_outputs_check1 CHECK (((status <> 'completed'::text) OR ((result IS NOT NULL) AND (cost_micros IS NOT NULL)))),
  constraint workflow_run_outputs_check2 CHECK (((status <> 'failed'::text) OR (error IS NOT NULL))),
  constraint workflow_run_outputs_cost_micros_check CHECK ((cost_micros >= 0)),
  constraint workflow_run_outputs_pending_deps_check CHECK ((pending_deps >= 0)),
  constraint workflow_run_outputs_status_check CHECK ((status = ANY (ARRAY['waiting'::text, 'queued'::text, 'running'::text, 'completed'::text, 'failed'::text, 'skipped'::text, 'abandoned'::text]))),
  constraint workflow_run_outputs_type_check CHECK ((type = ANY (ARRAY['image'::text, 'code'::text, 'screen'::text, 'design'::text, 'video'::text])))
);
comment on table kiln_private.workflow_run_outputs is 'One row per prompt → output edge of a run: its place in the DAG (refs, pending dependencies, dependents), its generation and its recorded outcome.';
comment on column kiln_private.workflow_run_outputs.generation_id is 'The generation that produces this output (null for skipped video outputs and for outputs a retry reused from the run it retries).';
CREATE TRIGGER tg_workflow_run_outputs__notify AFTER UPDATE OF status ON kiln_private.workflow_run_outputs FOR EACH ROW WHEN (old.status IS DISTINCT FROM new.status AND (new.status = ANY (ARRAY['completed'::text, 'failed'::text, 'skipped'::text, 'abandoned'::text]))) EXECUTE FUNCTION kiln_private.tg_workflow_runs__notify();

create table kiln_private.workflow_runs (
  id uuid default gen_random_uuid() not null,
  workflow_id uuid not null,
  account_id uuid not null,
  key_id uuid,
  workspace_id uuid,
  origin text not null,
  snapshot jsonb not null,
  status text default 'pending'::text not null,
  total integer not null,
  settled integer default 0 not null,
  abandoned integer default 0 not null,
  error text,
  deadline timestamp with time zone not null,
  window_seconds integer not null,
  max_attempts integer not null,
  created_at timestamp with time zone default now() not null,
  started_at timestamp with time zone,
  completed_at timestamp with time zone,
  updated_at timestamp with time zone default now() not null,
  retry_of uuid,
  end_user text,
  metadata jsonb,
  constraint workflow_runs_pkey PRIMARY KEY (id),
  constraint workflow_runs_account_id_fkey FOREIGN KEY (account_id) REFERENCES kiln_private.accounts(id),
  constraint workflow_runs_key_id_fkey FOREIGN KEY (key_id) REFERENCES kiln_private.api_keys(id),
  constraint workflow_runs_retry_of_fkey FOREIGN KEY (retry_of) REFERENCES kiln_private.workflow_runs(id),
  constraint workflow_runs_workflow_id_fkey FOREIGN KEY (workflow_id) REFERENCES kiln_private.workflows(id),
  constraint workflow_runs_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES kiln_private.workspaces(id),
  constraint workflow_runs_abandoned_check CHECK ((abandoned >= 0)),
  constraint workflow_runs_check CHECK (((settled + abandoned) <= total)),
  constraint workflow_runs_check1 CHECK (((status = ANY (ARRAY['completed'::text, 'failed'::text])) = (completed_at IS NOT NULL))),
  constraint workflow_runs_check2 CHECK (((status <> 'failed'::text) OR (error IS NOT NULL))),
  constraint workflow_runs_max_attempts_check CHECK (((max_attempts >= 1) AND (max_attempts <= 100))),
  constraint workflow_runs_origin_check CHECK ((origin = ANY (ARRAY['api'::text, 'mcp'::text, 'app'::text]))),
  constraint workflow_runs_settled_check CHECK ((settled >= 0)),
  constraint workflow_runs_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'running'::text, 'completed'::text, 'failed'::text]))),
  constraint workflow_runs_total_check CHECK ((total >= 0)),
  constraint workflow_runs_window_seconds_check CHECK ((window_seconds > 0)),
  constraint tg_workflow_runs__outbox TRIGGER DEFERRABLE INITIALLY DEFERRED
);
comment on table kiln_private.workflow_runs is 'Workflow runs: the immutable graph snapshot, status, progress counters and the run window deadline.';
comment on column kiln_private.workflow_runs.retry_of is 'The failed run this run retries (same snapshot; its completed outputs reused), or null.';
comment on column kiln_private.workflow_runs.end_user is 'POST /workflows/{id}/runs endUser; its outputs inherit it.';
comment on column kiln_private.workflow_runs.metadata is 'POST /workflows/{id}/runs metadata; its outputs inherit it.';
CREATE INDEX workflow_runs_account_idx ON kiln_private.workflow_runs USING btree (account_id, created_at);
CREATE UNIQUE INDEX workflow_runs_retry_of_key ON kiln_private.workflow_runs USING btree (retry_of) WHERE (retry_of IS NOT NULL);
CREATE INDEX workflow_runs_workflow_idx ON kiln_private.workflow_runs USING btree (workflow_id, created_at);
CREATE TRIGGER tg_workflow_runs__notify AFTER UPDATE ON kiln_private.workflow_runs FOR EACH ROW WHEN (old.status IS DISTINCT FROM new.status OR old.settled IS DISTINCT FROM new.settled OR old.abandoned IS DISTINCT FROM new.abandoned) EXECUTE FUNCTION kiln_private.tg_workflow_runs__notify();
CREATE CONSTRAINT TRIGGER tg_workflow_runs__outbox AFTER UPDATE OF status ON kiln_private.workflow_runs DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (old.status IS DISTINCT FROM new.status AND (new.status = ANY (ARRAY['completed'::text, 'failed'::text]))) EXECUTE FUNCTION kiln_private.tg_workflow_runs__outbox();

create table kiln_private.workflows (
  id uuid default gen_random_uuid() not null,
  account_id uuid not null,
  workspace_id uuid,
  name text not null,
  graph jsonb not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  version bigint default 1 not null,
  deleted_at timestamp with time zone,
  scope_id uuid generated always as (COALESCE(workspace_id, account_id)) stored,
  constraint workflows_pkey PRIMARY KEY (id),
  constraint workflows_account_id_fkey FOREIGN KEY (account_id) REFERENCES kiln_private.accounts(id),
  constraint workflows_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES kiln_private.workspaces(id),
  constraint workflows_graph_check CHECK ((jsonb_typeof(graph) = 'object'::text)),
  constraint workflows_name_check CHECK (((length(name) >= 1) AND (length(name) <= 200))),
  constraint workflows_version_check CHECK ((version >= 1))
);
comment on table kiln_private.workflows is 'Saved workflow graphs, one owner (billing scope) each.';
comment on column kiln_private.workflows.version is 'Bumped by every save (create = 1, replace); the API''s ETag. A run''s write-back does not change it.';
comment on column kiln_private.workflows.deleted_at is 'Set by kiln.delete_workflow: the workflow leaves lists and cannot run; its runs stay readable.';
comment on column kiln_private.workflows.scope_id is 'The owner: the workspace when saved through a workspace-bound key or identity, else the account.';
CREATE INDEX workflows_scope_updated_idx ON kiln_private.workflows USING btree (scope_id, updated_at DESC, id DESC) WHERE (deleted_at IS NULL);
CREATE TRIGGER tg_workflows__audit AFTER INSERT OR UPDATE OF version, deleted_at ON kiln_private.workflows FOR EACH ROW EXECUTE FUNCTION kiln_private.tg_workflows__audit();
CREATE TRIGGER tg_workflows__outbox AFTER INSERT OR UPDATE OF version, deleted_at ON kiln_private.workflows FOR EACH ROW EXECUTE FUNCTION kiln_private.tg_workflows__outbox();

create table kiln_private.workspace_members (
  workspace_id uuid not null,
  account_id uuid not null,
  role text not null,
  joined_at timestamp with time zone default now() not null,
  left_at timestamp with time zone,
  constraint workspace_members_pkey PRIMARY KEY (workspace_id, account_id),
  constraint workspace_members_account_id_fkey FOREIGN KEY (account_id) REFERENCES kiln_private.accounts(id),
  constraint workspace_members_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES kiln_private.workspaces(id) ON DELETE CASCADE,
  constraint workspace_members_role_check CHECK ((role = ANY (ARRAY['owner'::text, 'admin'::text, 'member'::text])))
);
CREATE INDEX workspace_members_account_idx ON kiln_private.workspace_members USING btree (account_id);
CREATE TRIGGER tg_workspace_members__audit AFTER INSERT OR UPDATE OF role, left_at ON kiln_private.workspace_members FOR EACH ROW EXECUTE FUNCTION kiln_private.tg_workspace_members__audit();

create table kiln_private.workspaces (
  id uuid default gen_random_uuid() not null,
  name text not null,
  owner_id uuid not null,
  plan_status text default 'none'::text not null,
  plan_budget_micros bigint,
  plan_period_anchor timestamp with time zone default date_trunc('day'::text, now(), 'UTC'::text) not null,
  created_at timestamp with time zone default now() not null,
  constraint workspaces_pkey PRIMARY KEY (id),
  constraint workspaces_owner_id_fkey FOREIGN KEY (owner_id) REFERENCES kiln_private.accounts(id),
  constraint workspaces_name_check CHECK (((length(name) >= 1) AND (length(name) <= 200))),
  constraint workspaces_plan_budget_micros_check CHECK ((plan_budget_micros >= 0)),
  constraint workspaces_plan_status_check CHECK ((plan_status = ANY (ARRAY['none'::text, 'active'::text, 'lapsed'::text])))
);
CREATE INDEX workspaces_owner_idx ON kiln_private.workspaces USING btree (owner_id);
CREATE TRIGGER tg_workspaces__audit AFTER INSERT OR UPDATE OF plan_status, plan_budget_micros, name ON kiln_private.workspaces FOR EACH ROW EXECUTE FUNCTION kiln_private.tg_workspaces__audit();

-- Sequences

create sequence kiln_private.batch_turn_seq as bigint increment 1 minvalue 1 maxvalue 9223372036854775807 start 1 cache 1;

-- Views (each defined in its own file)

-- view kiln.audit_log: db/views/kiln.audit_log.sql
-- view kiln.batches: db/views/kiln.batches.sql
-- view kiln.daily_generations: db/views/kiln.daily_generations.sql
-- view kiln.daily_spend: db/views/kiln.daily_spend.sql
-- view kiln.daily_workflow_runs: db/views/kiln.daily_workflow_runs.sql
-- view kiln.generation_latency: db/views/kiln.generation_latency.sql
-- view kiln.generation_timings: db/views/kiln.generation_timings.sql
-- view kiln.models: db/views/kiln.models.sql
-- view kiln.provider_health: db/views/kiln.provider_health.sql
-- view kiln.usage_by_end_user: db/views/kiln.usage_by_end_user.sql

-- Functions (each defined in its own file)

-- function kiln.add_batch_lines(uuid,uuid,text,integer,integer,text[],text[],text[],jsonb,bigint[],jsonb): db/functions/kiln.add_batch_lines.sql
-- function kiln.add_workspace_member(uuid,uuid,text): db/functions/kiln.add_workspace_member.sql
-- function kiln.admin_get_account(uuid): db/functions/kiln.admin_get_account.sql
-- function kiln.admin_get_workspace(uuid): db/functions/kiln.admin_get_workspace.sql
-- function kiln.admin_health(): db/functions/kiln.admin_health.sql
-- function kiln.admin_list_accounts(integer,bigint,uuid,text): db/functions/kiln.admin_list_accounts.sql
-- function kiln.admin_list_workspaces(integer,uuid,text): db/functions/kiln.admin_list_workspaces.sql
-- function kiln.admin_revoke_account_keys(uuid,uuid): db/functions/kiln.admin_revoke_account_keys.sql
-- function kiln.admin_set_model_enabled(uuid,text,boolean): db/functions/kiln.admin_set_model_enabled.sql
-- function kiln.admin_update_account(uuid,uuid,text,bigint,boolean): db/functions/kiln.admin_update_account.sql
-- function kiln.attach_worker_pool(text,text): db/functions/kiln.attach_worker_pool.sql
-- function kiln.authorize_request(bytea,text,text,integer): db/functions/kiln.authorize_request.sql
-- function kiln.authorize_requests(bytea[],text[],text[],integer[],boolean[]): db/functions/kiln.authorize_requests.sql
-- function kiln.batch_results(uuid,uuid,integer,integer): db/functions/kiln.batch_results.sql
-- function kiln.beat_worker(text): db/functions/kiln.beat_worker.sql
-- function kiln.begin_webhook_attempt(uuid,integer,integer): db/functions/kiln.begin_webhook_attempt.sql
-- function kiln.cancel_batch(uuid,uuid): db/functions/kiln.cancel_batch.sql
-- function kiln.cancel_generation(uuid,uuid,text[]): db/functions/kiln.cancel_generation.sql
-- function kiln.cancel_generations_for_keys(bytea[],integer,uuid[],text): db/functions/kiln.cancel_generations_for_keys.sql
-- function kiln.cancel_workflow_run(uuid,uuid,uuid): db/functions/kiln.cancel_workflow_run.sql
-- function kiln.cancel_workflow_runs_for_keys(bytea[],integer,uuid[],uuid[]): db/functions/kiln.cancel_workflow_runs_for_keys.sql
-- function kiln.claim_idempotency_key(uuid,text,text,bytea,integer): db/functions/kiln.claim_idempotency_key.sql
-- function kiln.claim_orphan_objects(integer,integer): db/functions/kiln.claim_orphan_objects.sql
-- function kiln.claim_sign_in(bytea,timestamp with time zone): db/functions/kiln.claim_sign_in.sql
-- function kiln.claim_upstream(text,integer): db/functions/kiln.claim_upstream.sql
-- function kiln.close_batch(uuid,uuid): db/functions/kiln.close_batch.sql
-- function kiln.complete_batch_lines(uuid,uuid[],jsonb,bigint[],text[],text[],text,bigint,integer,integer,integer): db/functions/kiln.complete_batch_lines.sql
-- function kiln.complete_generation(uuid,jsonb,bigint,text,text): db/functions/kiln.complete_generation.sql
-- function kiln.consume_account_rate_limit(uuid,text,integer): db/functions/kiln.consume_account_rate_limit.sql
-- function kiln.consume_rate_limits(text[],integer[]): db/functions/kiln.consume_rate_limits.sql
-- function kiln.count_objects_by_backend(): db/functions/kiln.count_objects_by_backend.sql
-- function kiln.create_account(text,text,bigint,boolean): db/functions/kiln.create_account.sql
-- function kiln.create_api_key(uuid,bytea,text,text[],integer,uuid,text): db/functions/kiln.create_api_key.sql
-- function kiln.create_batch(uuid,uuid,uuid,text,text[],text[],text[],jsonb[],bigint[],integer,text,bytea,integer,integer): db/functions/kiln.create_batch.sql
-- function kiln.create_first_account(text,bytea,text): db/functions/kiln.create_first_account.sql
-- function kiln.create_generation(uuid,uuid,uuid,text,text,text,bigint,jsonb,bigint,integer): db/functions/kiln.create_generation.sql
-- function kiln.create_generations(uuid[],uuid[],uuid[],text[],text[],text[],bigint[],jsonb[],bigint[],integer[],text[],bytea[],integer): db/functions/kiln.create_generations.sql
-- function kiln.create_key(uuid,uuid,text[],bytea,text,text,text[],integer,bigint,timestamp with time zone,boolean): db/functions/kiln.create_key.sql
-- function kiln.create_session(uuid,bytea,text,integer,integer,text): db/functions/kiln.create_session.sql
-- function kiln.create_webhook_endpoint(uuid,uuid,text,text[],text,bytea): db/functions/kiln.create_webhook_endpoint.sql
-- function kiln.create_workflow(uuid,uuid,text,jsonb): db/functions/kiln.create_workflow.sql
-- function kiln.create_workspace(text,uuid): db/functions/kiln.create_workspace.sql
-- function kiln.cut_generation_stream(uuid,text): db/functions/kiln.cut_generation_stream.sql
-- function kiln.defer_generation(uuid,text,bigint,text,boolean): db/functions/kiln.defer_generation.sql
-- function kiln.delete_webhook_endpoint(uuid,uuid): db/functions/kiln.delete_webhook_endpoint.sql
-- function kiln.delete_workflow(uuid,uuid,uuid,bigint[]): db/functions/kiln.delete_workflow.sql
-- function kiln.dispatch_batches(integer): db/functions/kiln.dispatch_batches.sql
-- function kiln.doctor_check(integer,integer,integer,integer): db/functions/kiln.doctor_check.sql
-- function kiln.doctor_fix(integer): db/functions/kiln.doctor_fix.sql
-- function kiln.doctor_stored_objects(boolean,text,integer): db/functions/kiln.doctor_stored_objects.sql
-- function kiln.end_batch_lines(uuid): db/functions/kiln.end_batch_lines.sql
-- function kiln.end_session(bytea): db/functions/kiln.end_session.sql
-- function kiln.ensure_secret(text,bytea): db/functions/kiln.ensure_secret.sql
-- function kiln.event_traceparent(bigint): db/functions/kiln.event_traceparent.sql
-- function kiln.events_held_back(uuid,xid8,bigint): db/functions/kiln.events_held_back.sql
-- function kiln.events_horizon(): db/functions/kiln.events_horizon.sql
-- function kiln.expire_batches(integer): db/functions/kiln.expire_batches.sql
-- function kiln.expire_objects(bigint,integer): db/functions/kiln.expire_objects.sql
-- function kiln.expire_workflow_run(uuid,integer): db/functions/kiln.expire_workflow_run.sql
-- function kiln.fail_generation(uuid,text): db/functions/kiln.fail_generation.sql
-- function kiln.filter_ended_generations(uuid[]): db/functions/kiln.filter_ended_generations.sql
-- function kiln.find_object(text): db/functions/kiln.find_object.sql
-- function kiln.forget_object_intents(text[]): db/functions/kiln.forget_object_intents.sql
-- function kiln.freeze_event_body(bigint,text): db/functions/kiln.freeze_event_body.sql
-- function kiln.get_batch(uuid,uuid): db/functions/kiln.get_batch.sql
-- function kiln.get_daily_usage(uuid,uuid,date,date): db/functions/kiln.get_daily_usage.sql
-- function kiln.get_daily_usage_groups(uuid,uuid,date,date,text,integer,date,bigint,text,boolean): db/functions/kiln.get_daily_usage_groups.sql
-- function kiln.get_daily_usage_groups_for_callers(uuid[],uuid[],date[],date[],text[],integer[],date[],bigint[],text[],boolean[]): db/functions/kiln.get_daily_usage_groups_for_callers.sql
-- function kiln.get_daily_usage_groups_for_keys(bytea[],integer,date[],date[],text[],integer[],date[],bigint[],text[],boolean[]): db/functions/kiln.get_daily_usage_groups_for_keys.sql
-- function kiln.get_end_user_budget(uuid,uuid,text): db/functions/kiln.get_end_user_budget.sql
-- function kiln.get_generation(uuid,uuid,text[]): db/functions/kiln.get_generation.sql
-- function kiln.get_generation_stream(uuid,uuid): db/functions/kiln.get_generation_stream.sql
-- function kiln.get_generations(uuid[],uuid[],text[]): db/functions/kiln.get_generations.sql
-- function kiln.get_held_output(uuid): db/functions/kiln.get_held_output.sql
-- function kiln.get_key(uuid,uuid,text[],uuid): db/functions/kiln.get_key.sql
-- function kiln.get_me(uuid): db/functions/kiln.get_me.sql
-- function kiln.get_object(text): db/functions/kiln.get_object.sql
-- function kiln.get_run_streams(uuid,uuid): db/functions/kiln.get_run_streams.sql
-- function kiln.get_usage(uuid,uuid): db/functions/kiln.get_usage.sql
-- function kiln.get_webhook_endpoint(uuid,uuid): db/functions/kiln.get_webhook_endpoint.sql
-- function kiln.get_workflow(uuid,uuid,uuid): db/functions/kiln.get_workflow.sql
-- function kiln.get_workflow_run(uuid,uuid,uuid): db/functions/kiln.get_workflow_run.sql
-- function kiln.get_workflow_run_graph(uuid,uuid,uuid): db/functions/kiln.get_workflow_run_graph.sql
-- function kiln.get_workflow_run_graphs_for_keys(bytea[],integer,uuid[],uuid[]): db/functions/kiln.get_workflow_run_graphs_for_keys.sql
-- function kiln.get_workflow_runs_for_keys(bytea[],integer,uuid[],uuid[]): db/functions/kiln.get_workflow_runs_for_keys.sql
-- function kiln.get_workflows_for_keys(bytea[],integer,uuid[]): db/functions/kiln.get_workflows_for_keys.sql
-- function kiln.hold_generation_output(uuid,text,bigint,bytea,jsonb,text,bigint,text,text,text,integer): db/functions/kiln.hold_generation_output.sql
-- function kiln.key_carries_scope(uuid,text): db/functions/kiln.key_carries_scope.sql
-- function kiln.link_identity(text,text,uuid,uuid,text): db/functions/kiln.link_identity.sql
-- function kiln.list_audit(uuid,integer,uuid,text): db/functions/kiln.list_audit.sql
-- function kiln.list_batch_generations(uuid,uuid,integer,timestamp with time zone,uuid,text[],text[],text,timestamp with time zone,text,jsonb): db/functions/kiln.list_batch_generations.sql
-- function kiln.list_batches(uuid,timestamp with time zone,uuid,integer): db/functions/kiln.list_batches.sql
-- function kiln.list_end_users(uuid,uuid,date,date,integer,bigint,text): db/functions/kiln.list_end_users.sql
-- function kiln.list_end_users_for_callers(uuid[],uuid[],date[],date[],integer[],bigint[],text[]): db/functions/kiln.list_end_users_for_callers.sql
-- function kiln.list_end_users_for_keys(bytea[],integer,date[],date[],integer[],bigint[],text[]): db/functions/kiln.list_end_users_for_keys.sql
-- function kiln.list_generations(uuid,uuid,text,integer,timestamp with time zone,uuid,text[],text[],text,timestamp with time zone,text,jsonb): db/functions/kiln.list_generations.sql
-- function kiln.list_generations_for_callers(uuid[],uuid[],text,integer[],timestamp with time zone[],uuid[],text[],text[],text[],timestamp with time zone[],text[],jsonb[]): db/functions/kiln.list_generations_for_callers.sql
-- function kiln.list_generations_for_keys(bytea[],integer,text,integer[],timestamp with time zone[],uuid[],text[],text[],text[],timestamp with time zone[],text[],jsonb[]): db/functions/kiln.list_generations_for_keys.sql
-- function kiln.list_identities(uuid): db/functions/kiln.list_identities.sql
-- function kiln.list_keys(uuid,uuid): db/functions/kiln.list_keys.sql
-- function kiln.list_objects_to_move(text,text,integer): db/functions/kiln.list_objects_to_move.sql
-- function kiln.list_webhook_deliveries(uuid,uuid,integer,timestamp with time zone,uuid): db/functions/kiln.list_webhook_deliveries.sql
-- function kiln.list_webhook_endpoints(uuid): db/functions/kiln.list_webhook_endpoints.sql
-- function kiln.list_workflow_runs(uuid,uuid,uuid,integer,integer): db/functions/kiln.list_workflow_runs.sql
-- function kiln.list_workflow_runs_for_callers(uuid[],uuid[],uuid[],integer[],integer[]): db/functions/kiln.list_workflow_runs_for_callers.sql
-- function kiln.list_workflow_runs_for_keys(bytea[],integer,uuid[],integer[],integer[]): db/functions/kiln.list_workflow_runs_for_keys.sql
-- function kiln.list_workflows(uuid,uuid,integer,integer): db/functions/kiln.list_workflows.sql
-- function kiln.list_workflows_for_callers(uuid[],uuid[],integer[],integer[]): db/functions/kiln.list_workflows_for_callers.sql
-- function kiln.list_workflows_for_keys(bytea[],integer,integer[],integer[]): db/functions/kiln.list_workflows_for_keys.sql
-- function kiln.lock_workflow(uuid,uuid,uuid,bigint[]): db/functions/kiln.lock_workflow.sql
-- function kiln.note_object_intent(text): db/functions/kiln.note_object_intent.sql
-- function kiln.open_batch(uuid,uuid,uuid,integer,text,bytea,integer,integer): db/functions/kiln.open_batch.sql
-- function kiln.poll_generations(bytea[],integer,uuid[],text): db/functions/kiln.poll_generations.sql
-- function kiln.purge_audit_log(integer): db/functions/kiln.purge_audit_log.sql
-- function kiln.purge_events(integer,integer): db/functions/kiln.purge_events.sql
-- function kiln.purge_idempotency_keys(integer): db/functions/kiln.purge_idempotency_keys.sql
-- function kiln.put_object(text,uuid,bytea,text,text,integer,integer,text): db/functions/kiln.put_object.sql
-- function kiln.read_events(uuid,xid8,bigint,timestamp with time zone,integer): db/functions/kiln.read_events.sql
-- function kiln.read_object_bytes(text): db/functions/kiln.read_object_bytes.sql
-- function kiln.record_idempotency_key(uuid,text,text,integer,jsonb): db/functions/kiln.record_idempotency_key.sql
-- function kiln.record_key_expiries(): db/functions/kiln.record_key_expiries.sql
-- function kiln.record_object(text,uuid,bytea,text,bytea,integer,text,text,integer,integer,text): db/functions/kiln.record_object.sql
-- function kiln.record_seed_object(text,bytea,text,bytea,integer,text,text,integer,integer): db/functions/kiln.record_seed_object.sql
-- function kiln.record_upstream(text,boolean,text,integer,integer): db/functions/kiln.record_upstream.sql
-- function kiln.record_webhook_attempt(uuid,integer,integer,integer,text,text,integer,integer,integer[],integer): db/functions/kiln.record_webhook_attempt.sql
-- function kiln.recover_webhook_deliveries(uuid,uuid,timestamp with time zone): db/functions/kiln.recover_webhook_deliveries.sql
-- function kiln.redeliver_webhook(uuid,uuid,uuid): db/functions/kiln.redeliver_webhook.sql
-- function kiln.redeliver_webhook_message(uuid,uuid,bigint): db/functions/kiln.redeliver_webhook_message.sql
-- function kiln.register_worker(text,integer): db/functions/kiln.register_worker.sql
-- function kiln.release_charge(uuid): db/functions/kiln.release_charge.sql
-- function kiln.release_upstream_trial(text): db/functions/kiln.release_upstream_trial.sql
-- function kiln.remove_end_user_budget(uuid,uuid,text): db/functions/kiln.remove_end_user_budget.sql
-- function kiln.remove_workspace_member(uuid,uuid): db/functions/kiln.remove_workspace_member.sql
-- function kiln.replace_workflow(uuid,uuid,uuid,text,jsonb,bigint[]): db/functions/kiln.replace_workflow.sql
-- function kiln.require_webhook_rights(uuid,uuid,uuid): db/functions/kiln.require_webhook_rights.sql
-- function kiln.reserve_budget(uuid,uuid,uuid,text,text,bigint,uuid,uuid,text,text): db/functions/kiln.reserve_budget.sql
-- function kiln.reserve_generation(uuid,bigint): db/functions/kiln.reserve_generation.sql
-- function kiln.resolve_identity(text,text,text,boolean,boolean): db/functions/kiln.resolve_identity.sql
-- function kiln.retire_worker(text): db/functions/kiln.retire_worker.sql
-- function kiln.retry_workflow_run(uuid,uuid,uuid,text,uuid,uuid,integer,integer): db/functions/kiln.retry_workflow_run.sql
-- function kiln.revoke_api_key(uuid): db/functions/kiln.revoke_api_key.sql
-- function kiln.revoke_key(uuid,uuid,text[],uuid): db/functions/kiln.revoke_key.sql
-- function kiln.roll_account_spend(integer): db/functions/kiln.roll_account_spend.sql
-- function kiln.rotate_key(uuid,uuid,text[],uuid,bytea,text,integer): db/functions/kiln.rotate_key.sql
-- function kiln.rotate_webhook_secret(uuid,uuid,bytea,integer): db/functions/kiln.rotate_webhook_secret.sql
-- function kiln.sample_telemetry(): db/functions/kiln.sample_telemetry.sql
-- function kiln.send_webhook_test(uuid,uuid): db/functions/kiln.send_webhook_test.sql
-- function kiln.session_info(bytea): db/functions/kiln.session_info.sql
-- function kiln.set_account_admin(uuid,boolean): db/functions/kiln.set_account_admin.sql
-- function kiln.set_audit_retention(interval): db/functions/kiln.set_audit_retention.sql
-- function kiln.set_end_user_budget(uuid,uuid,text,bigint,text,integer): db/functions/kiln.set_end_user_budget.sql
-- function kiln.set_workspace_plan(uuid,text,bigint,boolean): db/functions/kiln.set_workspace_plan.sql
-- function kiln.settle_charge(uuid,bigint): db/functions/kiln.settle_charge.sql
-- function kiln.sign_in(text,text,text,boolean,text[],boolean): db/functions/kiln.sign_in.sql
-- function kiln.snapshot_workflow(uuid,uuid,uuid): db/functions/kiln.snapshot_workflow.sql
-- function kiln.start_batch_lines(uuid,integer,integer,text,bigint,integer,integer,integer,boolean): db/functions/kiln.start_batch_lines.sql
-- function kiln.start_generation(uuid,text,bigint,integer,integer,integer,integer): db/functions/kiln.start_generation.sql
-- function kiln.start_generations(bytea[],text,text[],text[],bigint[],jsonb[],bigint[],integer,text[],bytea[],integer): db/functions/kiln.start_generations.sql
-- function kiln.start_workflow_run(uuid,uuid,uuid,text,uuid,jsonb,jsonb,integer,integer,text,jsonb): db/functions/kiln.start_workflow_run.sql
-- function kiln.stream_generation(uuid,text,integer,integer,text,jsonb,jsonb): db/functions/kiln.stream_generation.sql
-- function kiln.stream_generations(uuid[],text,integer[],integer[],text[],jsonb[]): db/functions/kiln.stream_generations.sql
-- function kiln.sweep_workers(integer): db/functions/kiln.sweep_workers.sql
-- function kiln.switch_object(text,text,bytea,text,bytea): db/functions/kiln.switch_object.sql
-- function kiln.switch_session_workspace(bytea,uuid): db/functions/kiln.switch_session_workspace.sql
-- function kiln.take_ended_generations(): db/functions/kiln.take_ended_generations.sql
-- function kiln.unlink_identity(text,text): db/functions/kiln.unlink_identity.sql
-- function kiln.unlock_dead_workers(integer): db/functions/kiln.unlock_dead_workers.sql
-- function kiln.update_account(uuid,text,bigint,boolean): db/functions/kiln.update_account.sql
-- function kiln.update_webhook_endpoint(uuid,uuid,jsonb): db/functions/kiln.update_webhook_endpoint.sql
-- function kiln.upsert_model(jsonb): db/functions/kiln.upsert_model.sql
-- function kiln.upsert_seed_object(text,bytea,text,text,integer,integer): db/functions/kiln.upsert_seed_object.sql
-- function kiln.watch_workflow_run(uuid,uuid,uuid): db/functions/kiln.watch_workflow_run.sql
-- function kiln_private.abandon_workflow_outputs(uuid,text[]): db/functions/kiln_private.abandon_workflow_outputs.sql
-- function kiln_private.admin_account_json(kiln_private.accounts,bigint): db/functions/kiln_private.admin_account_json.sql
-- function kiln_private.admin_workspace_json(kiln_private.workspaces): db/functions/kiln_private.admin_workspace_json.sql
-- function kiln_private.audit(uuid,text,text,text,jsonb): db/functions/kiln_private.audit.sql
-- function kiln_private.audit_json(kiln_private.audit_log): db/functions/kiln_private.audit_json.sql
-- function kiln_private.authorize_batch_locked(bytea[],text[],text[],integer[],boolean[]): db/functions/kiln_private.authorize_batch_locked.sql
-- function kiln_private.authorize_controls(bytea[],integer): db/functions/kiln_private.authorize_controls.sql
-- function kiln_private.authorize_keys(bytea[],text,integer): db/functions/kiln_private.authorize_keys.sql
-- function kiln_private.authorize_reads(bytea[],integer): db/functions/kiln_private.authorize_reads.sql
-- function kiln_private.batch_body(kiln_private.batches): db/functions/kiln_private.batch_body.sql
-- function kiln_private.batch_capacity(uuid): db/functions/kiln_private.batch_capacity.sql
-- function kiln_private.batch_line_request(jsonb,jsonb): db/functions/kiln_private.batch_line_request.sql
-- function kiln_private.busy_slots(uuid): db/functions/kiln_private.busy_slots.sql
-- function kiln_private.cancel_generation(uuid): db/functions/kiln_private.cancel_generation.sql
-- function kiln_private.check_run_budget(uuid,uuid,text): db/functions/kiln_private.check_run_budget.sql
-- function kiln_private.check_workflow_version(bigint,bigint[]): db/functions/kiln_private.check_workflow_version.sql
-- function kiln_private.claim_idempotency_keys(uuid[],text[],text[],bytea[],integer[],jsonb[],integer): db/functions/kiln_private.claim_idempotency_keys.sql
-- function kiln_private.count_batch_lines(uuid,integer,boolean,integer,integer,integer,bigint): db/functions/kiln_private.count_batch_lines.sql
-- function kiln_private.credentials(bytea[]): db/functions/kiln_private.credentials.sql
-- function kiln_private.debit_end_user_pools(uuid[],text[],timestamp with time zone[],bigint[],bigint[]): db/functions/kiln_private.debit_end_user_pools.sql
-- function kiln_private.debit_key_pools(uuid[],timestamp with time zone[],bigint[],bigint[]): db/functions/kiln_private.debit_key_pools.sql
-- function kiln_private.debit_pools(uuid[],timestamp with time zone[],bigint[],bigint[]): db/functions/kiln_private.debit_pools.sql
-- function kiln_private.dispatch_batch_lines(integer,uuid): db/functions/kiln_private.dispatch_batch_lines.sql
-- function kiln_private.dispatch_batches(integer): db/functions/kiln_private.dispatch_batches.sql
-- function kiln_private.drop_generation_stream(uuid): db/functions/kiln_private.drop_generation_stream.sql
-- function kiln_private.duration_text(integer): db/functions/kiln_private.duration_text.sql
-- function kiln_private.emit_event(uuid,text,uuid,json,uuid): db/functions/kiln_private.emit_event.sql
-- function kiln_private.end_generation(uuid,text): db/functions/kiln_private.end_generation.sql
-- function kiln_private.end_user_budget_json(uuid,text): db/functions/kiln_private.end_user_budget_json.sql
-- function kiln_private.end_user_period(text,timestamp with time zone): db/functions/kiln_private.end_user_period.sql
-- function kiln_private.end_user_spend(uuid,text,timestamp with time zone): db/functions/kiln_private.end_user_spend.sql
-- function kiln_private.enqueue_generations(uuid[],integer): db/functions/kiln_private.enqueue_generations.sql
-- function kiln_private.enqueue_new_generations(uuid[],integer): db/functions/kiln_private.enqueue_new_generations.sql
-- function kiln_private.fail_workflow_run(uuid,text): db/functions/kiln_private.fail_workflow_run.sql
-- function kiln_private.finish_batch(uuid): db/functions/kiln_private.finish_batch.sql
-- function kiln_private.generation_body(kiln_private.generations): db/functions/kiln_private.generation_body.sql
-- function kiln_private.generation_job_attempts(): db/functions/kiln_private.generation_job_attempts.sql
-- function kiln_private.idempotency_operation(text): db/functions/kiln_private.idempotency_operation.sql
-- function kiln_private.insert_generations(uuid[],uuid[],uuid[],text[],text[],text[],bigint[],jsonb[],bigint[],integer,text[],bytea[],integer): db/functions/kiln_private.insert_generations.sql
-- function kiln_private.key_json(kiln_private.api_keys,bigint): db/functions/kiln_private.key_json.sql
-- function kiln_private.key_period(uuid,uuid): db/functions/kiln_private.key_period.sql
-- function kiln_private.key_used(kiln_private.api_keys): db/functions/kiln_private.key_used.sql
-- function kiln_private.lease_held(text,bigint,integer): db/functions/kiln_private.lease_held.sql
-- function kiln_private.lease_key_held(integer): db/functions/kiln_private.lease_key_held.sql
-- function kiln_private.note_workflow_progress(uuid,integer): db/functions/kiln_private.note_workflow_progress.sql
-- function kiln_private.nudge_waiting_generation(uuid): db/functions/kiln_private.nudge_waiting_generation.sql
-- function kiln_private.object_generation_id(text): db/functions/kiln_private.object_generation_id.sql
-- function kiln_private.period_end(timestamp with time zone,timestamp with time zone): db/functions/kiln_private.period_end.sql
-- function kiln_private.period_start(timestamp with time zone,timestamp with time zone): db/functions/kiln_private.period_start.sql
-- function kiln_private.queue_delivery(uuid): db/functions/kiln_private.queue_delivery.sql
-- function kiln_private.rebuild_account_spend(): db/functions/kiln_private.rebuild_account_spend.sql
-- function kiln_private.rebuild_charge_days(): db/functions/kiln_private.rebuild_charge_days.sql
-- function kiln_private.require_admin(uuid): db/functions/kiln_private.require_admin.sql
-- function kiln_private.require_key_rights(text[],text[]): db/functions/kiln_private.require_key_rights.sql
-- function kiln_private.reserve_budgets(uuid[],uuid[],uuid[],text[],text[],bigint[],uuid[],uuid[],text[],text[],uuid[],jsonb[]): db/functions/kiln_private.reserve_budgets.sql
-- function kiln_private.roll_up_charges(kiln_private.charges[],kiln_private.charges[]): db/functions/kiln_private.roll_up_charges.sql
-- function kiln_private.schedule_run_deadline(uuid,timestamp with time zone): db/functions/kiln_private.schedule_run_deadline.sql
-- function kiln_private.stream_notify(kiln_private.generation_streams,integer,text,jsonb): db/functions/kiln_private.stream_notify.sql
-- function kiln_private.take_object_intent(text): db/functions/kiln_private.take_object_intent.sql
-- function kiln_private.tg_accounts__account_spend(): db/functions/kiln_private.tg_accounts__account_spend.sql
-- function kiln_private.tg_accounts__audit(): db/functions/kiln_private.tg_accounts__audit.sql
-- function kiln_private.tg_api_keys__audit(): db/functions/kiln_private.tg_api_keys__audit.sql
-- function kiln_private.tg_audit_log__append_only(): db/functions/kiln_private.tg_audit_log__append_only.sql
-- function kiln_private.tg_budget_periods__account_spend(): db/functions/kiln_private.tg_budget_periods__account_spend.sql
-- function kiln_private.tg_budget_periods__thresholds(): db/functions/kiln_private.tg_budget_periods__thresholds.sql
-- function kiln_private.tg_charges__roll_up(): db/functions/kiln_private.tg_charges__roll_up.sql
-- function kiln_private.tg_end_user_budgets__audit(): db/functions/kiln_private.tg_end_user_budgets__audit.sql
-- function kiln_private.tg_generations__batch(): db/functions/kiln_private.tg_generations__batch.sql
-- function kiln_private.tg_generations__drop_held(): db/functions/kiln_private.tg_generations__drop_held.sql
-- function kiln_private.tg_generations__notify(): db/functions/kiln_private.tg_generations__notify.sql
-- function kiln_private.tg_generations__outbox(): db/functions/kiln_private.tg_generations__outbox.sql
-- function kiln_private.tg_generations__tags(): db/functions/kiln_private.tg_generations__tags.sql
-- function kiln_private.tg_identities__audit(): db/functions/kiln_private.tg_identities__audit.sql
-- function kiln_private.tg_models__audit(): db/functions/kiln_private.tg_models__audit.sql
-- function kiln_private.tg_webhook_endpoints__audit(): db/functions/kiln_private.tg_webhook_endpoints__audit.sql
-- function kiln_private.tg_workflow_runs__notify(): db/functions/kiln_private.tg_workflow_runs__notify.sql
-- function kiln_private.tg_workflow_runs__outbox(): db/functions/kiln_private.tg_workflow_runs__outbox.sql
-- function kiln_private.tg_workflows__audit(): db/functions/kiln_private.tg_workflows__audit.sql
-- function kiln_private.tg_workflows__outbox(): db/functions/kiln_private.tg_workflows__outbox.sql
-- function kiln_private.tg_workspace_members__audit(): db/functions/kiln_private.tg_workspace_members__audit.sql
-- function kiln_private.tg_workspaces__audit(): db/functions/kiln_private.tg_workspaces__audit.sql
-- function kiln_private.touch_keys(uuid[],timestamp with time zone): db/functions/kiln_private.touch_keys.sql
-- function kiln_private.trim_upstream_minutes(): db/functions/kiln_private.trim_upstream_minutes.sql
-- function kiln_private.unfinishable_message(uuid): db/functions/kiln_private.unfinishable_message.sql
-- function kiln_private.unlock_silent_pools(integer): db/functions/kiln_private.unlock_silent_pools.sql
-- function kiln_private.usage_rows(uuid,uuid,uuid): db/functions/kiln_private.usage_rows.sql
-- function kiln_private.uuid_v7(timestamp with time zone): db/functions/kiln_private.uuid_v7.sql
-- function kiln_private.uuid_v7_ordered(timestamp with time zone): db/functions/kiln_private.uuid_v7_ordered.sql
-- function kiln_private.visible_key(uuid,uuid,uuid): db/functions/kiln_private.visible_key.sql
-- function kiln_private.webhook_endpoint_json(kiln_private.webhook_endpoints): db/functions/kiln_private.webhook_endpoint_json.sql
-- function kiln_private.webhook_job(uuid,uuid,integer,integer,timestamp with time zone): db/functions/kiln_private.webhook_job.sql
-- function kiln_private.worker_alive(text,integer): db/functions/kiln_private.worker_alive.sql
-- function kiln_private.workflow_event_data(kiln_private.workflows): db/functions/kiln_private.workflow_event_data.sql
-- function kiln_private.workflow_job_key(uuid,text): db/functions/kiln_private.workflow_job_key.sql
-- function kiln_private.workflow_scope(uuid,uuid): db/functions/kiln_private.workflow_scope.sql
-- function kiln_private.workflow_scopes(uuid,uuid): db/functions/kiln_private.workflow_scopes.sql
-- function kiln_private.write_back_workflow_run(uuid): db/functions/kiln_private.write_back_workflow_run.sql
