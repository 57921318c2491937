-- The kiln and kiln_private schemas as the committed migrations leave them (db/migrations/committed/).
-- Generated: do not edit. Regenerate with `npm run db:schema` (`kiln gm commit` also rewrites it);
-- test/db.schema.test.ts fails when this file is stale. Read it to review; migrations are the source.

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
  constraint charge_days_account_id_fkey FOREIGN KEY (account_id) REFERENCES kiln_private.accounts(id),
  constraint charge_days_key_id_fkey FOREIGN KEY (key_id) REFERENCES kiln_private.api_keys(id),
  constraint charge_days_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES kiln_private.workspaces(id)
) with (fillfactor=80);
comment on table kiln_private.charge_days is 'Ended charges of kiln_private.charges (settled or released) summed per pool, period, UTC day of creation, account, workspace, key, model and origin; kept by the tg_charges__roll_up* triggers in the transaction that ends (or changes) a charge. Open reservations are not in it: readers add them from kiln_private.charges through charges_open_idx. charges = settled_charges + released_charges; spend_micros = settled amounts.';
CREATE INDEX charge_days_account_day_idx ON kiln_private.charge_days USING btree (account_id, day);
CREATE INDEX charge_days_day_idx ON kiln_private.charge_days USING btree (day);
CREATE UNIQUE INDEX charge_days_key ON kiln_private.charge_days USING btree (pool_id, day, account_id, model_id, origin, key_id, period_start) NULLS NOT DISTINCT;

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
  constraint charges_pkey PRIMARY KEY (id),
  constraint charges_account_id_fkey FOREIGN KEY (account_id) REFERENCES kiln_private.accounts(id),
  constraint charges_key_id_fkey FOREIGN KEY (key_id) REFERENCES kiln_private.api_keys(id),
  constraint charges_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES kiln_private.workspaces(id),
  constraint charges_check CHECK (((settled_micros >= 0) AND (settled_micros <= reserved_micros))),
  constraint charges_check1 CHECK (((status = 'settled'::text) = (settled_micros IS NOT NULL))),
  constraint charges_origin_check CHECK ((origin = ANY (ARRAY['api'::text, 'mcp'::text, 'app'::text, 'workflow'::text]))),
  constraint charges_reserved_micros_check CHECK ((reserved_micros >= 0)),
  constraint charges_status_check CHECK ((status = ANY (ARRAY['reserved'::text, 'settled'::text, 'released'::text])))
);
comment on column kiln_private.charges.key_pool is 'The reservation is also held on its key''s own budget (kiln_private.key_budget_periods).';
CREATE INDEX charges_account_created_idx ON kiln_private.charges USING btree (account_id, created_at);
CREATE INDEX charges_generation_idx ON kiln_private.charges USING btree (generation_id) WHERE (generation_id IS NOT NULL);
CREATE INDEX charges_key_idx ON kiln_private.charges USING btree (key_id) WHERE (key_id IS NOT NULL);
CREATE INDEX charges_open_idx ON kiln_private.charges USING btree (pool_id, created_at) WHERE (status = 'reserved'::text);
CREATE UNIQUE INDEX charges_workflow_output_key ON kiln_private.charges USING btree (workflow_run_id, node_id) WHERE (workflow_run_id IS NOT NULL);
CREATE TRIGGER tg_charges__roll_up_delete AFTER DELETE ON kiln_private.charges REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION kiln_private.tg_charges__roll_up();
CREATE TRIGGER tg_charges__roll_up_insert_ended AFTER INSERT ON kiln_private.charges FOR EACH ROW WHEN (new.status <> 'reserved'::text) EXECUTE FUNCTION kiln_private.tg_charges__roll_up();
CREATE TRIGGER tg_charges__roll_up_update AFTER UPDATE ON kiln_private.charges REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION kiln_private.tg_charges__roll_up();

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
  constraint generations_pkey PRIMARY KEY (id),
  constraint generations_account_id_fkey FOREIGN KEY (account_id) REFERENCES kiln_private.accounts(id),
  constraint generations_charge_id_fkey FOREIGN KEY (charge_id) REFERENCES kiln_private.charges(id),
  constraint generations_key_id_fkey FOREIGN KEY (key_id) REFERENCES kiln_private.api_keys(id),
  constraint generations_run_id_fkey FOREIGN KEY (run_id) REFERENCES kiln_private.workflow_runs(id),
  constraint generations_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES kiln_private.workspaces(id),
  constraint generations_charge_check CHECK (((charge_id IS NOT NULL) OR (run_id IS NOT NULL))),
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
CREATE INDEX generations_active_idx ON kiln_private.generations USING btree (account_id, status, created_at) WHERE (status = ANY (ARRAY['pending'::text, 'processing'::text]));
CREATE INDEX generations_created_brin ON kiln_private.generations USING brin (created_at) WITH (autosummarize='on');
CREATE INDEX generations_list_idx ON kiln_private.generations USING btree (account_id, COALESCE(workspace_id, account_id), origin, type, status, created_at, id);
CREATE INDEX generations_list_model_idx ON kiln_private.generations USING btree (account_id, COALESCE(workspace_id, account_id), origin, model_id, type, status, created_at, id);
CREATE UNIQUE INDEX generations_run_output_key ON kiln_private.generations USING btree (run_id, output_node_id) WHERE (run_id IS NOT NULL);
CREATE TRIGGER tg_generations__notify AFTER UPDATE OF status ON kiln_private.generations FOR EACH ROW WHEN (old.status IS DISTINCT FROM new.status) EXECUTE FUNCTION kiln_private.tg_generations__notify();
CREATE TRIGGER tg_generations__outbox AFTER UPDATE OF status ON kiln_private.generations FOR EACH ROW WHEN (old.status IS DISTINCT FROM new.status AND (new.status = ANY (ARRAY['completed'::text, 'failed'::text])) AND new.run_id IS NULL) EXECUTE FUNCTION kiln_private.tg_generations__outbox();

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
  constraint models_pkey PRIMARY KEY (id),
  constraint models_category_check CHECK ((category = ANY (ARRAY['image'::text, 'text'::text, 'svg'::text]))),
  constraint models_fallbacks_check CHECK (((cardinality(fallbacks) <= 5) AND (NOT (id = ANY (fallbacks))))),
  constraint models_id_check CHECK ((id ~ '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$'::text)),
  constraint models_markup_check CHECK ((markup >= (1)::numeric)),
  constraint models_max_output_tokens_check CHECK ((max_output_tokens > 0)),
  constraint models_provider_check CHECK ((provider = ANY (ARRAY['local'::text, 'openai'::text, 'fal'::text, 'replicate'::text, 'anthropic'::text, 'gemini'::text])))
);
comment on column kiln_private.models.fallbacks is 'Catalog ids tried in order when this entry''s upstream fails after its retries (429, 5xx, timeout, network); same category. Content errors do not fall back.';
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

-- Views

create view kiln.audit_log as
 SELECT id,
    at,
    scope_id,
    actor_type,
    actor_id,
    action,
    target_type,
    target_id,
    ip,
    request_id,
    details
   FROM kiln_private.audit_log l;
comment on view kiln.audit_log is 'Analysts: who changed what (keys, sessions, identity links, webhooks, workflows, accounts, workspaces, the catalog), one row per change, append-only. No secrets.';

create view kiln.daily_generations as
 SELECT (created_at AT TIME ZONE 'UTC'::text)::date AS day,
    account_id,
    workspace_id,
    key_id,
    model_id,
    origin,
    type,
    count(*) AS generations,
    count(*) FILTER (WHERE status = 'completed'::text) AS completed,
    count(*) FILTER (WHERE status = 'failed'::text) AS failed,
    count(*) FILTER (WHERE status = ANY (ARRAY['pending'::text, 'processing'::text])) AS in_flight,
    COALESCE(sum(cost_micros), 0::numeric)::bigint AS cost_micros
   FROM kiln_private.generations g
  GROUP BY ((created_at AT TIME ZONE 'UTC'::text)::date), account_id, workspace_id, key_id, model_id, origin, type;
comment on view kiln.daily_generations is 'Generations per UTC day (of creation), account, workspace, API key, model, origin and type: totals by outcome and billed cost in microdollars.';

create view kiln.daily_spend as
 SELECT day,
    account_id,
    workspace_id,
    key_id,
    model_id,
    origin,
    sum(charges)::bigint AS charges,
    sum(settled_charges)::bigint AS settled_charges,
    sum(released_charges)::bigint AS released_charges,
    sum(open_reservations)::bigint AS open_reservations,
    sum(spend_micros)::bigint AS spend_micros,
    sum(held_micros)::bigint AS held_micros
   FROM ( SELECT r.day,
            r.account_id,
            r.workspace_id,
            r.key_id,
            r.model_id,
            r.origin,
            r.charges,
            r.settled_charges,
            r.released_charges,
            0::bigint AS open_reservations,
            r.spend_micros,
            0::bigint AS held_micros
           FROM kiln_private.charge_days r
        UNION ALL
         SELECT (c.created_at AT TIME ZONE 'UTC'::text)::date AS timezone,
            c.account_id,
            c.workspace_id,
            c.key_id,
            c.model_id,
            c.origin,
            1,
            0,
            0,
            1,
            0,
            c.reserved_micros
           FROM kiln_private.charges c
          WHERE c.status = 'reserved'::text) d
  GROUP BY day, account_id, workspace_id, key_id, model_id, origin
 HAVING sum(charges) > 0::numeric;
comment on view kiln.daily_spend is 'Ledger per UTC day, account, workspace (null = personal budget), API key (null = not a key), model and origin (api, mcp, app, workflow): charge counts by state, settled spend and still-held reservations, in microdollars. Reads the kiln_private.charge_days rollup plus the open reservations (charges_open_idx), so a filter on day or account costs what it returns.';

create view kiln.daily_workflow_runs as
 SELECT (created_at AT TIME ZONE 'UTC'::text)::date AS day,
    account_id,
    workspace_id,
    key_id,
    origin,
    count(*) AS runs,
    count(*) FILTER (WHERE status = 'completed'::text) AS completed,
    count(*) FILTER (WHERE status = 'failed'::text) AS failed,
    count(*) FILTER (WHERE status = ANY (ARRAY['pending'::text, 'running'::text])) AS in_flight,
    COALESCE(sum(total), 0::bigint) AS outputs,
    COALESCE(sum(( SELECT COALESCE(sum(o.cost_micros), 0::numeric) AS "coalesce"
           FROM kiln_private.workflow_run_outputs o
          WHERE o.run_id = r.id)), 0::numeric)::bigint AS cost_micros,
    percentile_cont(0.5::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM completed_at - created_at) * 1000::numeric)::double precision)) FILTER (WHERE status = 'completed'::text) AS duration_p50_ms
   FROM kiln_private.workflow_runs r
  GROUP BY ((created_at AT TIME ZONE 'UTC'::text)::date), account_id, workspace_id, key_id, origin;
comment on view kiln.daily_workflow_runs is 'Workflow runs per UTC day (of creation), account, workspace (null = personal budget), API key and origin: totals by outcome, outputs, billed cost in microdollars and the median enqueue → completed time.';

create view kiln.generation_latency as
 SELECT (created_at AT TIME ZONE 'UTC'::text)::date AS day,
    model_id,
    origin,
    count(*) FILTER (WHERE started_at IS NOT NULL) AS started,
    percentile_cont(0.5::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM started_at - created_at) * 1000::numeric)::double precision)) FILTER (WHERE started_at IS NOT NULL) AS queued_p50_ms,
    percentile_cont(0.95::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM started_at - created_at) * 1000::numeric)::double precision)) FILTER (WHERE started_at IS NOT NULL) AS queued_p95_ms,
    percentile_cont(0.99::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM started_at - created_at) * 1000::numeric)::double precision)) FILTER (WHERE started_at IS NOT NULL) AS queued_p99_ms,
    count(*) FILTER (WHERE status = 'completed'::text) AS completed,
    percentile_cont(0.5::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM finished_at - started_at) * 1000::numeric)::double precision)) FILTER (WHERE status = 'completed'::text) AS processing_p50_ms,
    percentile_cont(0.95::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM finished_at - started_at) * 1000::numeric)::double precision)) FILTER (WHERE status = 'completed'::text) AS processing_p95_ms,
    percentile_cont(0.99::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM finished_at - started_at) * 1000::numeric)::double precision)) FILTER (WHERE status = 'completed'::text) AS processing_p99_ms
   FROM kiln_private.generations g
  GROUP BY ((created_at AT TIME ZONE 'UTC'::text)::date), model_id, origin;
comment on view kiln.generation_latency is 'Generation latency per UTC day, model and origin in milliseconds: queued = created → first started (waiting for a worker and a parallel slot), processing = started → completed (completed generations only); p50/p95/p99.';

create view kiln.generation_timings as
 SELECT id,
    (created_at AT TIME ZONE 'UTC'::text)::date AS day,
    account_id,
    workspace_id,
    key_id,
    model_id,
    origin,
    type,
    status,
    attempts,
    cost_micros,
    created_at,
    EXTRACT(epoch FROM started_at - created_at) * 1000::numeric AS queued_ms,
    EXTRACT(epoch FROM finished_at - started_at) * 1000::numeric AS processing_ms,
    max_attempts,
    crashes,
    crash_streak,
    last_error,
    error
   FROM kiln_private.generations g;
comment on view kiln.generation_timings is 'One row per generation with its queued (created → first started) and processing (started → finished) times in milliseconds, for percentiles over any window (null while not yet started or finished), and what its executions went through: attempts (executions that ran to an end, of max_attempts), crashes (executions cut off by a dead worker and taken over; crash_streak in a row), the last transient error and the final error.';

create view kiln.models as
 SELECT id,
    name,
    description,
    category,
    provider,
    upstream,
    supports_image_input,
    input_modalities,
    output_modalities,
    cost,
    max_output_tokens,
    markup,
    enabled,
    sort_order,
    updated_at,
    fallbacks
   FROM kiln_private.models;
comment on view kiln.models is 'The model catalog (upstream cost; billed price = cost × markup).';

create view kiln.provider_health as
 SELECT m.id AS model_id,
    m.provider,
    m.upstream ->> 'baseUrl'::text AS base_url,
    COALESCE(m.upstream ->> 'model'::text, m.upstream ->> 'app'::text, m.upstream ->> 'version'::text) AS upstream_model,
        CASE
            WHEN h.skipped_until IS NULL THEN
            CASE
                WHEN COALESCE(h.consecutive_failures, 0) > 0 THEN 'failing'::text
                ELSE 'healthy'::text
            END
            WHEN h.skipped_until > now() THEN 'skipped'::text
            WHEN h.trial_until > now() THEN 'trial'::text
            ELSE 'awaiting_trial'::text
        END AS state,
    COALESCE(h.consecutive_failures, 0) AS consecutive_failures,
    h.skipped_until,
    h.last_error,
    h.last_error_at,
    h.last_success_at,
    COALESCE(r.calls, 0::bigint) AS calls_15m,
    COALESCE(r.failures, 0::bigint) AS failures_15m,
        CASE
            WHEN COALESCE(r.calls, 0::bigint) > 0 THEN round(r.failures::numeric / r.calls::numeric, 3)
            ELSE NULL::numeric
        END AS error_rate_15m
   FROM kiln_private.models m
     LEFT JOIN kiln_private.upstream_health h ON h.model_id = m.id
     LEFT JOIN LATERAL ( SELECT sum(um.successes + um.failures) AS calls,
            sum(um.failures) AS failures
           FROM kiln_private.upstream_minutes um
          WHERE um.model_id = m.id AND um.minute >= (date_trunc('minute'::text, now()) - '00:14:00'::interval)) r ON true
  WHERE m.provider <> 'local'::text;
comment on view kiln.provider_health is 'Each network catalog entry''s upstream as the workers see it: state (healthy, failing, skipped — its fallback is taken at once —, trial — one call in flight decides —, awaiting_trial), the consecutive failures, until when it is skipped, the last error (client-safe summary) and the calls, failures and error rate of the last 15 minutes.';

-- Functions

CREATE OR REPLACE FUNCTION kiln.add_workspace_member(p_workspace_id uuid, p_account_id uuid, p_role text DEFAULT 'member'::text)
 RETURNS kiln_private.workspace_members
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;
comment on function kiln.add_workspace_member(uuid,uuid,text) is 'Adds (or re-adds) a member with a role.';

CREATE OR REPLACE FUNCTION kiln.admin_get_account(p_account_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select (kiln_private.admin_account_json(a, coalesce(b.held_micros + b.settled_micros, 0))::jsonb || jsonb_build_object(
    'periodStart', to_char(p.s at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'resetsAt', to_char(kiln_private.period_end(a.period_anchor, p.s) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'createdAt', to_char(a.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'keys', coalesce((select jsonb_agg(kiln_private.key_json(k, kiln_private.key_used(k))::jsonb order by k.created_at desc, k.id)
                      from kiln_private.api_keys k where k.account_id = a.id and k.kind = 'key'), '[]'),
    'workspaces', coalesce((select jsonb_agg(jsonb_build_object('id', w.id, 'name', w.name, 'role', m.role) order by w.name, w.id)
                            from kiln_private.workspace_members m join kiln_private.workspaces w on w.id = m.workspace_id
                            where m.account_id = a.id and m.left_at is null), '[]')))::json
  from kiln_private.accounts a
  cross join lateral (select kiln_private.period_start(a.period_anchor, now()) as s) p
  left join kiln_private.budget_periods b on b.pool_id = a.id and b.period_start = p.s
  where a.id = p_account_id;
$function$;
comment on function kiln.admin_get_account(uuid) is 'GET /admin/accounts/{id}: the account page: tier, budget, spend this period and when it resets, its keys (never a hash) and workspaces. No row for an unknown account.';

CREATE OR REPLACE FUNCTION kiln.admin_get_workspace(p_workspace_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select (kiln_private.admin_workspace_json(w) || jsonb_build_object(
    'members', coalesce((select jsonb_agg(jsonb_build_object(
                           'accountId', m.account_id, 'email', a.email, 'role', m.role,
                           'joinedAt', to_char(m.joined_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                           'leftAt', to_char(m.left_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
                         order by m.left_at is not null, m.role = 'member', a.email)
                         from kiln_private.workspace_members m join kiln_private.accounts a on a.id = m.account_id
                         where m.workspace_id = w.id), '[]')))::json
  from kiln_private.workspaces w where w.id = p_workspace_id;
$function$;
comment on function kiln.admin_get_workspace(uuid) is 'GET /admin/workspaces/{id}: the workspace and its members (former ones too, with leftAt). No row for an unknown workspace.';

CREATE OR REPLACE FUNCTION kiln.admin_health()
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'providers', coalesce((select json_agg(json_build_object(
                             'modelId', h.model_id, 'provider', h.provider, 'state', h.state,
                             'consecutiveFailures', h.consecutive_failures,
                             'skippedUntil', to_char(h.skipped_until at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                             'lastError', h.last_error,
                             'lastErrorAt', to_char(h.last_error_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                             'lastSuccessAt', to_char(h.last_success_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                             'calls15m', h.calls_15m, 'failures15m', h.failures_15m, 'errorRate15m', h.error_rate_15m)
                           order by h.model_id) from kiln.provider_health h), '[]'),
    'queue', (select json_build_object(
                'jobs', count(*),
                'ready', count(*) filter (where j.locked_at is null and j.run_at <= now() and j.attempts < j.max_attempts),
                'running', count(*) filter (where j.locked_at is not null),
                'scheduled', count(*) filter (where j.locked_at is null and j.run_at > now()),
                'oldestReadyAt', to_char(min(j.run_at) filter (where j.locked_at is null and j.run_at <= now() and j.attempts < j.max_attempts)
                                         at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                'oldestReadySeconds', floor(extract(epoch from now() - min(j.run_at) filter (
                                        where j.locked_at is null and j.run_at <= now() and j.attempts < j.max_attempts)))::bigint)
              from graphile_worker.jobs j),
    'webhooks', (select json_build_object(
                   'pending', count(*),
                   'due', count(*) filter (where d.next_attempt_at <= now()),
                   'oldestDueAt', to_char(min(d.next_attempt_at) filter (where d.next_attempt_at <= now()) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
                 from kiln_private.webhook_deliveries d where d.status = 'pending'));
$function$;
comment on function kiln.admin_health() is 'GET /admin/health: each network catalog entry''s upstream (kiln.provider_health), the job queue (graphile_worker.jobs, the public view: ready, running, scheduled, the oldest ready job) and the webhook backlog (pending deliveries, those due and the oldest due).';

CREATE OR REPLACE FUNCTION kiln.admin_list_accounts(p_limit integer, p_after_used bigint, p_after_id uuid, p_q text)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  -- The sort is (spend this period desc, id desc); a cursor is the last row's pair.
  -- Without a cursor, a pair above every row: each walk is then one index range, generic plan or not.
  v_after_used bigint := case when p_after_id is null then 9223372036854775807 else p_after_used end;
  v_after_id uuid := coalesce(p_after_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
  v_zero_after uuid := case when p_after_id is null or p_after_used > 0 then 'ffffffff-ffff-ffff-ffff-ffffffffffff' else p_after_id end;
  v_pattern text;
  v_ids uuid[] := '{}';
  v_used bigint[] := '{}';
  v_more uuid[];
  v_more_used bigint[];
  v_need int;
begin
  if p_limit is null or p_limit < 1 or p_limit > 200 then
    raise exception 'limit must be between 1 and 200' using errcode = 'KI001';
  end if;
  if p_q is not null then
    v_pattern := '%' || replace(replace(replace(lower(p_q), '\', '\\'), '%', '\%'), '_', '\_') || '%';
  end if;

  if v_pattern is not null and (select count(*) from (select 1 from kiln_private.accounts a
                                                       where lower(a.email) like v_pattern limit 5000) x) < 5000 then
    -- A narrow search (under 5,000 matches, found through the trigram index): rank the matches.
    select coalesce(array_agg(m.id order by m.used desc, m.id desc), '{}'), coalesce(array_agg(m.used order by m.used desc, m.id desc), '{}')
      into v_ids, v_used
      from (select x.id, x.used
            -- Each match's spend by primary key (offset 0: never a hash join over every account's row).
            from (select a.id, case when s.period_end > now() then s.used_micros else 0 end as used
                  from kiln_private.accounts a
                  cross join lateral (select y.used_micros, y.period_end from kiln_private.account_spend y
                                      where y.account_id = a.id offset 0) s
                  where lower(a.email) like v_pattern) x
            where (x.used, x.id) < (v_after_used, v_after_id)
            order by x.used desc, x.id desc
            limit p_limit + 1) m;
  else
    -- Everyone, or a wide search (matches are dense in any order): walk account_spend_used_idx
    -- backwards from the cursor, checking each row's email by primary key as it goes (offset 0
    -- keeps the check a per-row lookup, never a semi-join that first reads every match). First
    -- who spent this period…
    select coalesce(array_agg(p.account_id order by p.used_micros desc, p.account_id desc), '{}'),
           coalesce(array_agg(p.used_micros order by p.used_micros desc, p.account_id desc), '{}')
      into v_ids, v_used
      from (select s.account_id, s.used_micros from kiln_private.account_spend s
            where s.used_micros > 0 and s.period_end > now()
              and (s.used_micros, s.account_id) < (v_after_used, v_after_id)
              and (v_pattern is null or exists (select 1 from kiln_private.accounts a where a.id = s.account_id and lower(a.email) like v_pattern offset 0))
            order by s.used_micros desc, s.account_id desc
            limit p_limit + 1) p;
    v_need := p_limit + 1 - cardinality(v_ids);
    if v_need > 0 then
      -- …then who spent nothing (including periods that rolled without a charge), by id.
      select coalesce(array_agg(z.account_id order by z.account_id desc), '{}'), coalesce(array_agg(0::bigint), '{}')
        into v_more, v_more_used
        from (select u.account_id from (
                (select s.account_id from kiln_private.account_spend s
                 where s.used_micros = 0 and s.account_id < v_zero_after
                   and (v_pattern is null or exists (select 1 from kiln_private.accounts a where a.id = s.account_id and lower(a.email) like v_pattern offset 0))
                 order by s.used_micros desc, s.account_id desc limit v_need)
                union all
                (select s.account_id from kiln_private.account_spend s
                 where s.used_micros > 0 and s.period_end <= now() and s.account_id < v_zero_after
                   and (v_pattern is null or exists (select 1 from kiln_private.accounts a where a.id = s.account_id and lower(a.email) like v_pattern offset 0))
                 order by s.account_id desc limit v_need)) u
              order by u.account_id desc limit v_need) z;
      v_ids := v_ids || v_more;
      v_used := v_used || v_more_used;
    end if;
  end if;

  return json_build_object(
    -- One primary-key lookup per row (offset 0 keeps the planner from hashing the whole table).
    'data', coalesce((select json_agg(kiln_private.admin_account_json(a.a, v_used[o.i]) order by o.i)
                      from unnest(v_ids[1:p_limit]) with ordinality as o(id, i)
                      cross join lateral (select x as a from kiln_private.accounts x where x.id = o.id offset 0) a), '[]'),
    'nextCursor', case when cardinality(v_ids) > p_limit then v_used[p_limit] || '.' || v_ids[p_limit] end);
end;
$function$;
comment on function kiln.admin_list_accounts(integer,bigint,uuid,text) is 'GET /admin/accounts: a page of accounts sorted by spend this period (held + settled, desc; then id desc), after the cursor (the previous page''s last spend and id), optionally those whose email contains p_q. Reads kiln_private.account_spend through its index, so a page costs what it returns: a search with under 5,000 matches ranks them alone (trigram index), a wider one filters the ordered walk.';

CREATE OR REPLACE FUNCTION kiln.admin_list_workspaces(p_limit integer, p_after uuid, p_q text)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  with page as (
    select w from kiln_private.workspaces w
    where (p_after is null or w.id < p_after)
      and (p_q is null or strpos(lower(w.name), lower(p_q)) > 0)
    order by w.id desc
    limit p_limit + 1)
  select json_build_object(
    'data', coalesce((select json_agg(kiln_private.admin_workspace_json(p.w) order by (p.w).id desc)
                      from (select * from page order by (w).id desc limit p_limit) p), '[]'),
    'nextCursor', case when (select count(*) from page) > p_limit
                       then (select (w).id from page order by (w).id desc offset p_limit - 1 limit 1) end);
$function$;
comment on function kiln.admin_list_workspaces(integer,uuid,text) is 'GET /admin/workspaces: a page of workspaces by id (newest first for uuid v7 ids; any stable order otherwise), optionally whose name contains p_q.';

CREATE OR REPLACE FUNCTION kiln.admin_revoke_account_keys(p_admin_id uuid, p_account_id uuid)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_ids uuid[];
begin
  perform kiln_private.require_admin(p_admin_id);
  perform 1 from kiln_private.accounts where id = p_account_id;
  if not found then
    raise exception 'account not found' using errcode = 'KN001';
  end if;
  -- One update: the api_keys trigger writes one key.revoked entry per key.
  with revoked as (
    update kiln_private.api_keys set revoked_at = now()
    where account_id = p_account_id and kind = 'key' and revoked_at is null
    returning id)
  select coalesce(array_agg(id), '{}') into v_ids from revoked;
  delete from kiln_private.api_key_grace where key_id = any (v_ids);
  return json_build_object('revoked', cardinality(v_ids), 'account', kiln.admin_get_account(p_account_id));
end;
$function$;
comment on function kiln.admin_revoke_account_keys(uuid,uuid) is 'POST /admin/accounts/{id}/revoke-keys: revokes every live API key of the account (every secret, rotation grace included; one key.revoked audit entry each). Sessions are not keys and stay. KF001 unless an admin, KN001 unknown account.';

CREATE OR REPLACE FUNCTION kiln.admin_set_model_enabled(p_admin_id uuid, p_model_id text, p_enabled boolean)
 RETURNS kiln_private.models
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_model kiln_private.models;
begin
  perform kiln_private.require_admin(p_admin_id);
  if p_enabled is null then
    raise exception 'enabled must be true or false' using errcode = 'KI001';
  end if;
  -- updated_at is the entry's price version: a generation priced from a cached entry before the
  -- change is refused (KS001) and priced again; a disabled entry is refused at once (KI001).
  update kiln_private.models set enabled = p_enabled, updated_at = now()
    where id = p_model_id and enabled is distinct from p_enabled
    returning * into v_model;
  if not found then
    select * into v_model from kiln_private.models where id = p_model_id;
    if not found then
      raise exception 'model not found' using errcode = 'KN001';
    end if;
  end if;
  return v_model;
end;
$function$;
comment on function kiln.admin_set_model_enabled(uuid,text,boolean) is 'PATCH /admin/models/{id}: enables or disables a catalog entry (audited as model.enabled / model.disabled by the models trigger; no entry when unchanged). KF001 unless an admin, KN001 unknown entry.';

CREATE OR REPLACE FUNCTION kiln.admin_update_account(p_admin_id uuid, p_account_id uuid, p_tier text, p_budget_micros bigint, p_set_budget boolean)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform kiln_private.require_admin(p_admin_id);
  perform kiln.update_account(p_account_id, p_tier, p_budget_micros, p_set_budget);
  return kiln.admin_get_account(p_account_id);
end;
$function$;
comment on function kiln.admin_update_account(uuid,uuid,text,bigint,boolean) is 'PATCH /admin/accounts/{id}: kiln.update_account by an admin (KF001 otherwise), audited as account.updated by the accounts trigger; returns the account page.';

CREATE OR REPLACE FUNCTION kiln.attach_worker_pool(p_worker_id text, p_pool_id text)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  update kiln_private.worker_heartbeats set pool_id = p_pool_id, last_seen = now() where worker_id = p_worker_id;
$function$;
comment on function kiln.attach_worker_pool(text,text) is 'Records the graphile-worker pool id (what jobs are locked_by) of a registered worker.';

CREATE OR REPLACE FUNCTION kiln.authorize_request(p_key_hash bytea, p_scope text, p_bucket text, p_bucket_rpm integer)
 RETURNS kiln.request_auth
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select row(r.status, r.key_id, r.account_id, r.workspace_id, r.tier, r.scopes, r.retry_after)::kiln.request_auth
  from kiln.authorize_requests(array[p_key_hash], array[p_scope], array[p_bucket], array[p_bucket_rpm], array[false]) r;
$function$;
comment on function kiln.authorize_request(bytea,text,text,integer) is 'Authenticates an API key by its SHA-256 hash, checks the scope, then applies the key''s custom rpm bucket and the endpoint bucket. Missing, revoked and unknown keys all give status unauthorized.';

CREATE OR REPLACE FUNCTION kiln.authorize_requests(p_key_hashes bytea[], p_scopes text[], p_buckets text[], p_bucket_rpms integer[], p_with_usage boolean[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, usage text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET lock_timeout TO '2s'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
declare
  v_stale uuid[];
  v_n int := coalesce(cardinality(p_key_hashes), 0);
  v_now timestamptz := clock_timestamp();
  v_hash bytea[];
  v_id uuid[];
  v_account uuid[];
  v_workspace uuid[];
  v_scope text[];
  v_rpm int[];
  v_tier text[];
  v_at int[] := '{}';      -- per request: index of its key in the v_* arrays (0 = unknown)
  v_bkey text[] := '{}';   -- per request: its one bucket (null = none)
  v_lim int[] := '{}';
  v_keys text[] := '{}';   -- distinct buckets of the batch
  v_limits int[] := '{}';
  v_admitted text[];
  v_i int;
  v_j int;
  v_b text;
  v_usage_ords int[] := '{}';
begin
  if v_n = 0 then
    return;
  end if;
  -- Every key of the batch in one index scan; always a fresh read (revocation is immediate).
  select array_agg(k.key_hash), array_agg(k.id), array_agg(k.account_id), array_agg(k.workspace_id),
         array_agg(array_to_string(k.scopes, ',')), array_agg(k.rpm), array_agg(k.tier),
         array_agg(k.id) filter (where k.last_used_at is null or k.last_used_at < v_now - interval '1 minute')
    into v_hash, v_id, v_account, v_workspace, v_scope, v_rpm, v_tier, v_stale
    from kiln_private.credentials(p_key_hashes) k;
  -- Last use, to the minute: at most one write per key a minute, never a wait (skip locked).
  -- Only keys whose stored last use is over a minute old (read with the credentials): most
  -- batches write nothing and run no statement for it.
  if v_stale is not null then
    perform kiln_private.touch_keys(v_stale, v_now);
  end if;


  for v_i in 1 .. v_n loop
    v_j := coalesce(array_position(v_hash, p_key_hashes[v_i]), 0);
    v_at[v_i] := v_j;
    v_b := null;
    if v_j > 0 and (position(p_scopes[v_i] in v_scope[v_j]) > 0 or (p_scopes[v_i] = 'read' and position('write' in v_scope[v_j]) > 0)) then
      if v_rpm[v_j] is not null then
        if p_buckets[v_i] is not null then
          -- Two buckets for one request: the general path decides all-or-nothing.
          return query select * from kiln_private.authorize_batch_locked(p_key_hashes, p_scopes, p_buckets, p_bucket_rpms, p_with_usage);
          return;
        end if;
        v_b := 'key:' || v_id[v_j];
        v_lim[v_i] := v_rpm[v_j];
      elsif p_buckets[v_i] = 'read' then
        v_b := 'read:' || v_id[v_j];
        v_lim[v_i] := p_bucket_rpms[v_i];
      elsif p_buckets[v_i] = 'transform' then
        v_b := 'transform:' || v_account[v_j];
        v_lim[v_i] := p_bucket_rpms[v_i];
      elsif p_buckets[v_i] is not null then
        raise exception 'unknown bucket %', p_buckets[v_i] using errcode = '22023';
      end if;
      if v_b is not null then
        if v_b = any (v_keys) then
          -- A bucket shared within the batch: admissions depend on each other.
          return query select * from kiln_private.authorize_batch_locked(p_key_hashes, p_scopes, p_buckets, p_bucket_rpms, p_with_usage);
          return;
        end if;
        v_keys := v_keys || v_b;
        v_limits := v_limits || v_lim[v_i];
      end if;
    elsif v_j > 0 then
      v_at[v_i] := -v_j;  -- authenticated, wrong scope
    end if;
    v_bkey[v_i] := v_b;
  end loop;

  -- Independent buckets: one upsert creates, decides and debits them all (GCRA: T = 60 s / N,
  -- burst N), locking rows in key order like the general path.
  if cardinality(v_keys) > 0 then
    with admitted as (
      insert into kiln_private.rate_limit_buckets as t (key, tat)
        select u.key, v_now + make_interval(secs => 60.0 / u.lim)
        from unnest(v_keys, v_limits) as u(key, lim)
        order by u.key
      on conflict (key) do update
        -- excluded.tat - v_now is the bucket's emission interval T.
        set tat = greatest(t.tat, v_now) + (excluded.tat - v_now)
        where greatest(t.tat, v_now) + (excluded.tat - v_now) - v_now <= interval '60 seconds'
      returning t.key)
    select array_agg(a.key) into v_admitted from admitted a;
  end if;

  for v_i in 1 .. v_n loop
    ord := v_i;
    v_j := abs(v_at[v_i]);
    usage := null;
    if v_j = 0 then
      status := 'unauthorized'; key_id := null; account_id := null; workspace_id := null;
      tier := null; scopes := null; retry_after := null;
      return next;
      continue;
    end if;
    key_id := v_id[v_j];
    account_id := v_account[v_j];
    workspace_id := v_workspace[v_j];
    tier := v_tier[v_j];
    scopes := string_to_array(v_scope[v_j], ',');
    if v_at[v_i] < 0 then
      status := 'insufficient_scope';
      retry_after := null;
    elsif v_bkey[v_i] is null or v_bkey[v_i] = any (v_admitted) then
      status := 'ok';
      retry_after := 0;
      if p_with_usage[v_i] then
        -- Rendered below with the GET /usage body, for all such requests in one query.
        v_usage_ords := v_usage_ords || v_i;
        continue;
      end if;
    else
      status := 'rate_limited';
      -- The bucket's TAT read afresh; rounded up, so waiting this long always finds room.
      select greatest(1, ceil(extract(epoch from (
               greatest(t.tat, v_now) + make_interval(secs => 60.0 / v_lim[v_i]) - v_now - interval '60 seconds')))::int)
        into retry_after from kiln_private.rate_limit_buckets t where t.key = v_bkey[v_i];
    end if;
    return next;
  end loop;

  if cardinality(v_usage_ords) > 0 then
    return query
      select o.i::int, 'ok'::text, v_id[v_at[o.i]], v_account[v_at[o.i]], v_workspace[v_at[o.i]], v_tier[v_at[o.i]],
             string_to_array(v_scope[v_at[o.i]], ','), 0, u.usage::text
      from unnest(v_usage_ords) as o(i)
      left join lateral kiln_private.usage_rows(v_account[v_at[o.i]], v_workspace[v_at[o.i]], v_id[v_at[o.i]]) u on true;
  end if;
end;
$function$;
comment on function kiln.authorize_requests(bytea[],text[],text[],integer[],boolean[]) is 'Authenticates a batch of API keys by SHA-256 hash, checks scopes and applies GCRA rate limits (the key''s custom rpm bucket and the endpoint bucket; all or none per request) in arrival order, in one transaction; optionally returns the GET /usage body. Batches whose buckets are independent are decided by one upsert; the rest by kiln_private.authorize_batch_locked.';

CREATE OR REPLACE FUNCTION kiln.beat_worker(p_worker_id text)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.worker_heartbeats;
begin
  update kiln_private.worker_heartbeats set last_seen = now() where worker_id = p_worker_id
    returning * into v_row;
  if not found then
    return false;
  end if;
  -- No job lock is refreshed here any more (graphile-worker has no public call for it): a
  -- generation's deadline is capped below graphile-worker's 4-hour lock expiry instead
  -- (KILN_GENERATION_TIMEOUT_MS, src/config.ts), so no job stays locked that long.
  -- Called on the lease connection: false when this session no longer holds the lease (the
  -- connection was replaced), so the worker stops running jobs under it.
  return exists (
    select 1 from pg_locks l
    where l.locktype = 'advisory' and l.granted and l.pid = pg_backend_pid()
      and l.database = (select oid from pg_database where datname = current_database())
      and l.classid = 1263094862::oid and l.objid = v_row.lease_key::oid and l.objsubid = 2);
end;
$function$;
comment on function kiln.beat_worker(text) is 'A registered worker''s heartbeat, on its lease connection: records it and returns whether this session still holds the lease.';

CREATE OR REPLACE FUNCTION kiln.begin_webhook_attempt(p_delivery_id uuid, p_round integer, p_tries integer)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_d kiln_private.webhook_deliveries;
  v_e kiln_private.webhook_endpoints;
  v_ev kiln_private.events;
begin
  select * into v_d from kiln_private.webhook_deliveries where id = p_delivery_id;
  -- Delivered, failed, deleted, or a job of an earlier round or try: nothing to do.
  if not found or v_d.status <> 'pending' or v_d.round <> p_round or v_d.tries <> p_tries then return null; end if;
  select * into v_e from kiln_private.webhook_endpoints where id = v_d.endpoint_id;
  if not v_e.enabled then
    update kiln_private.webhook_deliveries set status = 'failed', failed_at = clock_timestamp(), next_attempt_at = null,
      last_error = 'endpoint disabled' where id = p_delivery_id;
    return null;
  end if;
  select * into v_ev from kiln_private.events where id = v_d.event_id;
  return json_build_object(
    'id', v_d.id, 'url', v_e.url, 'endpointId', v_e.id,
    'secret', encode(v_e.secret_enc, 'base64'),
    'oldSecret', case when v_e.old_secret_until > now() then encode(v_e.old_secret_enc, 'base64') end,
    'event', json_build_object('id', v_ev.id, 'type', v_ev.type,
      'occurredAt', to_char(v_ev.occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'data', v_ev.data, 'body', v_ev.body));
end;
$function$;
comment on function kiln.begin_webhook_attempt(uuid,integer,integer) is 'What an attempt needs (URL, encrypted secrets, the event and its frozen body), or null when the job is stale (delivery settled, another round or try) or the endpoint is gone; a disabled endpoint fails the delivery.';

CREATE OR REPLACE FUNCTION kiln.cancel_generation(p_account_id uuid, p_id uuid, p_origins text[])
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
begin
  select * into v_gen from kiln_private.generations
    where id = p_id and account_id = p_account_id and origin = any (p_origins);
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  if v_gen.run_id is not null then
    -- The lock order of every settlement: the run, then the generation.
    perform 1 from kiln_private.workflow_runs where id = v_gen.run_id for update;
  end if;
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if v_gen.status in ('completed', 'failed') then
    return json_build_object('outcome', 'conflict', 'body', kiln_private.generation_body(v_gen));
  end if;
  perform kiln_private.cancel_generation(p_id);
  select * into v_gen from kiln_private.generations where id = p_id;
  return json_build_object('outcome', 'canceled', 'body', kiln_private.generation_body(v_gen), 'model_id', v_gen.model_id);
end;
$function$;
comment on function kiln.cancel_generation(uuid,uuid,text[]) is 'Cancels a generation of the account created through one of p_origins: outcome canceled (failed with error ''canceled'', reservation released, its worker told to abort; with its model_id, for the canceling process''s metrics), conflict (already completed or failed) or missing; body = the generation as the API reads it. Never raises for these outcomes (safe in a batch).';

CREATE OR REPLACE FUNCTION kiln.cancel_generations_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_ids uuid[], p_origin text)
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, outcome text, body json, model_id text)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select a.ord, a.status, a.key_id, a.account_id, a.workspace_id, a.tier, a.scopes, a.retry_after, c->>'outcome', c->'body', c->>'model_id'
  from kiln_private.authorize_controls(p_key_hashes, p_read_rpm) a
  left join lateral (
    select kiln.cancel_generation(a.account_id, p_ids[a.ord], array[p_origin]) as c where a.status = 'ok'
  ) x on true
  order by a.ord;
$function$;
comment on function kiln.cancel_generations_for_keys(bytea[],integer,uuid[],text) is 'POST /generations/{id}/cancel for a batch in one transaction: authorizes each key (write scope, the per-key read bucket, the key''s own rpm) and, when admitted, cancels that generation of the key''s account created through p_origin (kiln.cancel_generation; outcome null when not admitted; model_id of a canceled one).';

CREATE OR REPLACE FUNCTION kiln.cancel_workflow_run(p_account_id uuid, p_workflow_id uuid, p_run_id uuid)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_run kiln_private.workflow_runs;
  v_out record;
  v_settled json;
begin
  select * into v_run from kiln_private.workflow_runs
    where id = p_run_id and account_id = p_account_id and workflow_id = p_workflow_id
    for update;
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  if v_run.status in ('completed', 'failed') then
    return json_build_object('outcome', 'conflict', 'status', v_run.status);
  end if;
  -- What this cancel settles, read under the run's lock (every settlement takes it first): the
  -- generations of outputs not started (abandoned below: failed) and of outputs in flight
  -- (canceled below).
  select coalesce(json_agg(json_build_object('type', g.type, 'model_id', g.model_id,
           'status', case when o.status = 'running' then 'canceled' else 'failed' end) order by o.ordinal), '[]'::json)
    into v_settled
    from kiln_private.workflow_run_outputs o
    join kiln_private.generations g on g.id = o.generation_id
    where o.run_id = p_run_id and o.status in ('waiting', 'queued', 'running') and g.status not in ('completed', 'failed');
  -- The run fails with 'canceled' first (outputs not started are abandoned, nothing charged) ...
  perform kiln_private.fail_workflow_run(p_run_id, 'canceled');
  -- ... then each output in flight is canceled like a generation: failed 'canceled', released,
  -- its provider call aborted. Completed outputs keep their results and charges.
  for v_out in
    select o.generation_id from kiln_private.workflow_run_outputs o
      where o.run_id = p_run_id and o.status in ('queued', 'running') and o.generation_id is not null
      order by o.ordinal
  loop
    perform kiln_private.cancel_generation(v_out.generation_id);
  end loop;
  return json_build_object('outcome', 'canceled', 'run', kiln.get_workflow_run(p_account_id, p_workflow_id, p_run_id), 'settled', v_settled);
end;
$function$;
comment on function kiln.cancel_workflow_run(uuid,uuid,uuid) is 'Cancels a pending or running run of the account''s workflow: the run fails with error ''canceled'', outputs not started are abandoned, outputs in flight are canceled (kiln_private.cancel_generation: released, their workers told to abort), completed ones stay. Outcome canceled (with the run as kiln.get_workflow_run reads it, and settled: the generations it ended, each {type, model_id, status canceled|failed}, for the canceling process''s metrics), conflict (already completed or failed) or missing. Never raises for these outcomes.';

CREATE OR REPLACE FUNCTION kiln.cancel_workflow_runs_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_workflow_ids uuid[], p_run_ids uuid[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, outcome text, body json, settled json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select a.ord, a.status, a.key_id, a.account_id, a.workspace_id, a.tier, a.scopes, a.retry_after, c->>'outcome', c->'run', c->'settled'
  from kiln_private.authorize_controls(p_key_hashes, p_read_rpm) a
  left join lateral (
    select kiln.cancel_workflow_run(a.account_id, p_workflow_ids[a.ord], p_run_ids[a.ord]) as c where a.status = 'ok'
  ) x on true
  order by a.ord;
$function$;
comment on function kiln.cancel_workflow_runs_for_keys(bytea[],integer,uuid[],uuid[]) is 'POST /workflows/{id}/runs/{runId}/cancel for a batch in one transaction: authorizes each key (write scope, the per-key read bucket, the key''s own rpm) and, when admitted, cancels that run of the key''s account (kiln.cancel_workflow_run; outcome null when not admitted; settled: the generations it ended).';

CREATE OR REPLACE FUNCTION kiln.claim_idempotency_key(p_account_id uuid, p_operation text, p_key text, p_fingerprint bytea, p_ttl_seconds integer)
 RETURNS TABLE(replayed boolean, response_status integer, response_body jsonb)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_c record;
begin
  select * into v_c from kiln_private.claim_idempotency_keys(array[p_account_id], array[p_operation], array[p_key],
    array[p_fingerprint], array[null::int], array[null::jsonb], p_ttl_seconds);
  if v_c.outcome = 'conflict' then
    raise exception 'this idempotency key was already used with a different request; use a new key for a new request' using errcode = 'KD001';
  elsif v_c.outcome = 'pending' then
    raise exception 'a request with this idempotency key is still being processed; retry' using errcode = 'KD002';
  end if;
  return query select v_c.outcome = 'replay', v_c.response_status, v_c.response_body;
end;
$function$;
comment on function kiln.claim_idempotency_key(uuid,text,text,bytea,integer) is 'Claims one Idempotency-Key for the caller''s transaction (kiln_private.claim_idempotency_keys): replayed false = claimed (record the answer with kiln.record_idempotency_key before committing; a rollback frees the key), true = the stored status and body. Raises KD001 (used with another request), KD002 (no stored answer).';

CREATE OR REPLACE FUNCTION kiln.claim_orphan_objects(p_grace_seconds integer, p_limit integer)
 RETURNS SETOF text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- Notes whose key a row references are settled: drop them.
  delete from kiln_private.object_intents i
  where i.created_at < now() - make_interval(secs => p_grace_seconds)
    and exists (select 1 from kiln_private.objects o where o.location = i.location);
  -- A claim commits before any byte is deleted; one left by a sweep that died is taken again
  -- after another grace period.
  return query
    update kiln_private.object_intents i set claimed_at = now()
    where i.location in (
      select c.location from kiln_private.object_intents c
      where c.created_at < now() - make_interval(secs => p_grace_seconds)
        and (c.claimed_at is null or c.claimed_at < now() - make_interval(secs => p_grace_seconds))
      order by c.created_at
      limit p_limit
      for update skip locked)
    returning i.location;
end;
$function$;
comment on function kiln.claim_orphan_objects(integer,integer) is 'Claims up to p_limit bucket keys noted more than p_grace_seconds ago that no object row references (a claimed key can no longer be referenced, see kiln_private.take_object_intent): the sweep deletes their bytes, then calls kiln.forget_object_intents. The grace outlasts any presigned URL.';

CREATE OR REPLACE FUNCTION kiln.claim_sign_in(p_state_hash bytea, p_expires_at timestamp with time zone)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- Expired claims go first: a transaction past its expiry is refused before it gets here.
  delete from kiln_private.sign_in_states where expires_at < now();
  insert into kiln_private.sign_in_states (state_hash, expires_at) values (p_state_hash, p_expires_at)
    on conflict (state_hash) do nothing;
  return found;
end;
$function$;
comment on function kiln.claim_sign_in(bytea,timestamp with time zone) is 'Marks an SSO sign-in transaction (the hash of its state) as completed, once: false when it already was (a replayed callback).';

CREATE OR REPLACE FUNCTION kiln.claim_upstream(p_model_id text, p_trial_seconds integer)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_h kiln_private.upstream_health;
begin
  select * into v_h from kiln_private.upstream_health where model_id = p_model_id;
  if not found or v_h.skipped_until is null then
    return 'use';
  end if;
  if v_h.skipped_until > now() then
    return 'skip';
  end if;
  -- The skip window is over: exactly one caller gets the trial call; the others keep skipping
  -- until it reports (or its lease runs out, when its worker died).
  update kiln_private.upstream_health
    set trial_until = now() + make_interval(secs => greatest(p_trial_seconds, 1)), updated_at = now()
    where model_id = p_model_id and skipped_until <= now() and (trial_until is null or trial_until <= now());
  return case when found then 'trial' else 'skip' end;
end;
$function$;
comment on function kiln.claim_upstream(text,integer) is 'Whether a worker may call a catalog entry''s upstream now: use (healthy), skip (skipped after repeated failures, or another worker''s trial call is in flight) or trial (this caller makes the one call that decides; its lease lasts p_trial_seconds).';

CREATE OR REPLACE FUNCTION kiln.complete_generation(p_id uuid, p_result jsonb, p_cost_micros bigint, p_provider_request_id text, p_model_id text DEFAULT NULL::text)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
  v_run kiln_private.workflow_runs;
  v_out kiln_private.workflow_run_outputs;
  v_charge kiln_private.charges;
  v_run_id uuid;
  v_ready uuid[];
begin
  select run_id into v_run_id from kiln_private.generations where id = p_id;
  if not found then
    raise exception 'generation not found' using errcode = 'KN001';
  end if;
  if v_run_id is not null then
    select * into v_run from kiln_private.workflow_runs where id = v_run_id for update;
  end if;
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if v_gen.status in ('completed', 'failed') or v_gen.charge_id is null then
    -- Idempotent: a duplicated or retried job finds the first result in place.
    return json_build_object('applied', false, 'status', v_gen.status, 'cost_micros', v_gen.cost_micros);
  end if;
  v_charge := kiln.settle_charge(v_gen.charge_id, p_cost_micros);
  if p_model_id is not null and p_model_id is distinct from v_charge.model_id then
    -- A fallback produced the output: the ledger names (and bills) the model that made it.
    update kiln_private.charges set model_id = p_model_id where id = v_charge.id returning * into v_charge;
  end if;
  update kiln_private.generations
    set status = 'completed',
        result = p_result,
        cost_micros = coalesce(v_charge.settled_micros, 0),
        provider_request_id = left(p_provider_request_id, 200),
        waiting = false,
        finished_at = now(),
        updated_at = now()
    where id = p_id;

  if v_run_id is not null then
    -- The run records the output; its dependents lose one pending dependency and those reaching
    -- zero are queued, all in this transaction.
    update kiln_private.workflow_run_outputs
      set status = 'completed', result = p_result || jsonb_build_object('type', type),
          cost_micros = coalesce(v_charge.settled_micros, 0), finished_at = clock_timestamp(), updated_at = now()
      where run_id = v_run_id and output_node_id = v_gen.output_node_id
      returning * into v_out;
    if v_run.status in ('pending', 'running') and cardinality(v_out.dependents) > 0 then
      with dec as (
        update kiln_private.workflow_run_outputs
          set pending_deps = pending_deps - 1,
              status = case when pending_deps = 1 then 'queued' else status end,
              updated_at = now()
          where run_id = v_run_id and output_node_id = any (v_out.dependents) and status = 'waiting'
          returning generation_id, status, ordinal
      )
      select array_agg(generation_id order by ordinal) filter (where status = 'queued') into v_ready from dec;
      perform kiln_private.enqueue_generations(v_ready, v_run.max_attempts);
    end if;
    perform kiln_private.note_workflow_progress(v_run_id, 1);
  end if;
  perform kiln_private.nudge_waiting_generation(v_gen.account_id);
  return json_build_object('applied', true, 'status', 'completed', 'cost_micros', v_charge.settled_micros,
                           'queued', coalesce(cardinality(v_ready), 0));
end;
$function$;
comment on function kiln.complete_generation(uuid,jsonb,bigint,text,text) is 'Stores the result and settles the charge at the actual cost (clamped to the reservation) in one call; the charge names p_model_id, the catalog entry that produced the output (a fallback of the requested one, or itself). For a run output also records it on the run, decrements its dependents and queues those ready. Idempotent: only the first completion of a generation applies.';

CREATE OR REPLACE FUNCTION kiln.consume_account_rate_limit(p_account_id uuid, p_bucket text, p_rpm integer)
 RETURNS integer
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select kiln.consume_rate_limits(array[p_bucket || ':' || p_account_id::text], array[p_rpm]);
$function$;
comment on function kiln.consume_account_rate_limit(uuid,text,integer) is 'Per-account bucket (e.g. transform) for callers that are not API keys (MCP). Returns retry-after seconds or 0.';

CREATE OR REPLACE FUNCTION kiln.consume_rate_limits(p_keys text[], p_limits integer[])
 RETURNS integer
 LANGUAGE plpgsql
 SET lock_timeout TO '2s'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
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
  if cardinality(p_keys) = 1 then
    -- Emission interval T = 60 s / N; a burst of N is allowed (tolerance N·T = 60 s).
    v_interval := make_interval(secs => 60.0 / p_limits[1]);
    insert into kiln_private.rate_limit_buckets as b (key, tat)
      values (p_keys[1], v_now + v_interval)
      on conflict (key) do update
        set tat = greatest(b.tat, v_now) + v_interval
        where greatest(b.tat, v_now) + v_interval - v_now <= interval '60 seconds';
    if found then
      return 0;
    end if;
    select tat into v_tat from kiln_private.rate_limit_buckets where key = p_keys[1];
    -- Rounded up: waiting this long always finds room again.
    return greatest(1, ceil(extract(epoch from (greatest(v_tat, v_now) + v_interval - v_now - interval '60 seconds')))::int);
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
    v_interval := make_interval(secs => 60.0 / p_limits[v_i]);
    v_new_tat := v_new_tat || (greatest(v_tat, v_now) + v_interval);
    if v_new_tat[v_i] - v_now > interval '60 seconds' then
      v_retry := greatest(v_retry,
        extract(epoch from (v_new_tat[v_i] - v_now - interval '60 seconds')));
    end if;
  end loop;
  if v_retry > 0 then
    return greatest(1, ceil(v_retry)::int);
  end if;
  for v_i in 1 .. cardinality(p_keys) loop
    update kiln_private.rate_limit_buckets set tat = v_new_tat[v_i] where key = p_keys[v_i];
  end loop;
  return 0;
end;
$function$;
comment on function kiln.consume_rate_limits(text[],integer[]) is 'GCRA on the database clock: admits one request against every bucket (N per minute, burst N) or none. Returns 0 when admitted, else retry-after in whole seconds (rounded up).';

CREATE OR REPLACE FUNCTION kiln.count_objects_by_backend()
 RETURNS TABLE(backend text, objects bigint, bytes bigint)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select o.backend, count(*), coalesce(sum(o.byte_size), 0)::bigint from kiln_private.objects o group by o.backend;
$function$;
comment on function kiln.count_objects_by_backend() is 'Objects and bytes per backend (store migrate''s progress total).';

CREATE OR REPLACE FUNCTION kiln.create_account(p_email text, p_tier text DEFAULT 'legacy_free'::text, p_budget_micros bigint DEFAULT NULL::bigint, p_use_tier_default boolean DEFAULT true)
 RETURNS kiln_private.accounts
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;
comment on function kiln.create_account(text,text,bigint,boolean) is 'Creates an account. The budget defaults to the tier''s default unless given (null with p_use_tier_default = false means unlimited).';

CREATE OR REPLACE FUNCTION kiln.create_api_key(p_account_id uuid, p_key_hash bytea, p_display_prefix text, p_scopes text[], p_rpm integer, p_workspace_id uuid, p_name text DEFAULT NULL::text)
 RETURNS kiln_private.api_keys
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;
comment on function kiln.create_api_key(uuid,bytea,text,text[],integer,uuid,text) is 'Stores a new API key (hash only). Workspace binding requires a current owner or admin of that workspace.';

CREATE OR REPLACE FUNCTION kiln.create_first_account(p_email text, p_key_hash bytea, p_display_prefix text)
 RETURNS kiln_private.accounts
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_account kiln_private.accounts;
begin
  -- One process at a time, and only on an empty database.
  perform pg_advisory_xact_lock(hashtext('kiln:dev-account'));
  perform 1 from kiln_private.accounts limit 1;
  if found then
    return null;
  end if;
  v_account := kiln.create_account(p_email, 'pro', null, true);
  perform kiln.create_api_key(v_account.id, p_key_hash, p_display_prefix, array['read', 'write'], null, null, 'development key');
  return v_account;
end;
$function$;
comment on function kiln.create_first_account(text,bytea,text) is 'On a database without accounts: creates a development account (pro tier) and a read+write key with the given hash, and returns the account; null when any account exists.';

CREATE OR REPLACE FUNCTION kiln.create_generation(p_account_id uuid, p_key_id uuid, p_workspace_id uuid, p_origin text, p_type text, p_model_id text, p_model_version bigint, p_request jsonb, p_reserve_micros bigint, p_max_attempts integer)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_r record;
begin
  select * into v_r from kiln_private.insert_generations(array[p_account_id], array[p_key_id], array[p_workspace_id], array[p_origin],
    array[p_type], array[p_model_id], array[p_model_version], array[p_request], array[p_reserve_micros], p_max_attempts);
  if v_r.error_code is not null then
    raise exception '%', v_r.error_message using errcode = v_r.error_code;
  end if;
  return v_r.id;
end;
$function$;
comment on function kiln.create_generation(uuid,uuid,uuid,text,text,text,bigint,jsonb,bigint,integer) is 'kiln_private.insert_generations for one request: checks the model, reserves the worst-case cost, inserts the generation and queues generation__run. Raises KI001, KQ001/KP001, KS001 (stale catalog price; internal).';

CREATE OR REPLACE FUNCTION kiln.create_generations(p_account_ids uuid[], p_key_ids uuid[], p_workspace_ids uuid[], p_origins text[], p_types text[], p_model_ids text[], p_model_versions bigint[], p_requests jsonb[], p_reserves bigint[], p_max_attempts integer[], p_idem_keys text[] DEFAULT NULL::text[], p_fingerprints bytea[] DEFAULT NULL::bytea[], p_idem_ttl_seconds integer DEFAULT 86400)
 RETURNS TABLE(ord integer, id uuid, error_code text, error_message text, replayed boolean)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
begin
  if cardinality(p_account_ids) > 50 then
    raise exception 'at most 50 generations per call' using errcode = '22023';
  end if;
  -- One attempts limit per call (every caller passes the same); the largest is kept.
  return query select * from kiln_private.insert_generations(p_account_ids, p_key_ids, p_workspace_ids, p_origins, p_types,
    p_model_ids, p_model_versions, p_requests, p_reserves, (select max(a) from unnest(p_max_attempts) a),
    p_idem_keys, p_fingerprints, p_idem_ttl_seconds);
end;
$function$;
comment on function kiln.create_generations(uuid[],uuid[],uuid[],text[],text[],text[],bigint[],jsonb[],bigint[],integer[],text[],bytea[],integer) is 'Starts up to 50 generations of already-authorized callers in one transaction (kiln_private.insert_generations), with their Idempotency-Keys (null: none). Each row reports its id (replayed: stored by an earlier request with that key and body), or the SQLSTATE and message of its own business error; the others still commit.';

CREATE OR REPLACE FUNCTION kiln.create_key(p_account_id uuid, p_workspace_id uuid, p_caller_scopes text[], p_key_hash bytea, p_display_prefix text, p_name text, p_scopes text[], p_rpm integer, p_budget_micros bigint, p_expires_at timestamp with time zone)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_key kiln_private.api_keys;
  v_extra text[];
begin
  select array_agg(s) into v_extra from unnest(p_scopes) s where not (s = any (coalesce(p_caller_scopes, '{}')));
  if v_extra is not null then
    raise exception 'a key cannot have scopes its creator lacks: %', array_to_string(v_extra, ', ') using errcode = 'KF001';
  end if;
  if p_expires_at is not null and p_expires_at <= now() then
    raise exception 'expiresAt must be in the future' using errcode = 'KI001';
  end if;
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
      raise exception 'only a workspace owner or admin may create keys billed to it' using errcode = 'KF001';
    end if;
  end if;
  insert into kiln_private.api_keys (account_id, key_hash, display_prefix, scopes, rpm, workspace_id, name, budget_micros, expires_at)
    values (p_account_id, p_key_hash, p_display_prefix, p_scopes, p_rpm, p_workspace_id, p_name, p_budget_micros, p_expires_at)
    returning * into v_key;
  return kiln_private.key_json(v_key, 0);
exception
  when check_violation then
    raise exception 'invalid key settings (scopes: one or more of read, write, keys, admin; rpm and budgetMicros positive; name up to 200 characters)' using errcode = 'KI001';
end;
$function$;
comment on function kiln.create_key(uuid,uuid,text[],bytea,text,text,text[],integer,bigint,timestamp with time zone) is 'POST /keys: a new key in the caller''s billing scope, its scopes within the caller''s (KF001), with an optional rpm, own budget per period and expiry. Returns its list entry.';

CREATE OR REPLACE FUNCTION kiln.create_session(p_account_id uuid, p_key_hash bytea, p_display_prefix text, p_idle_seconds integer, p_lifetime_seconds integer, p_name text)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid;
begin
  insert into kiln_private.api_keys (account_id, key_hash, display_prefix, scopes, kind, name, idle_seconds, expires_at, last_used_at)
    values (p_account_id, p_key_hash, p_display_prefix, array['read', 'write', 'keys', 'admin'], 'session', left(p_name, 200),
            p_idle_seconds, now() + make_interval(secs => p_lifetime_seconds), now())
    returning id into v_id;
  return v_id;
end;
$function$;
comment on function kiln.create_session(uuid,bytea,text,integer,integer,text) is 'A console session after a sign-in (audited as session.created). Its admin scope counts only while the user is an admin.';

CREATE OR REPLACE FUNCTION kiln.create_webhook_endpoint(p_account_id uuid, p_workspace_id uuid, p_url text, p_events text[], p_description text, p_secret_enc bytea)
 RETURNS json
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  insert into kiln_private.webhook_endpoints (scope_id, account_id, workspace_id, url, events, description, secret_enc)
    values (coalesce(p_workspace_id, p_account_id), p_account_id, p_workspace_id, p_url, p_events, p_description, p_secret_enc)
    returning kiln_private.webhook_endpoint_json(webhook_endpoints);
$function$;
comment on function kiln.create_webhook_endpoint(uuid,uuid,text,text[],text,bytea) is 'Creates an endpoint in the scope of the creating key (the workspace when bound, else the account). Returns it (no secret).';

CREATE OR REPLACE FUNCTION kiln.create_workflow(p_account_id uuid, p_workspace_id uuid, p_name text, p_graph jsonb)
 RETURNS kiln_private.workflows
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.workflows;
begin
  if p_workspace_id is not null then
    perform 1 from kiln_private.workspace_members
      where workspace_id = p_workspace_id and account_id = p_account_id and left_at is null;
    if not found then
      raise exception 'the account is not a member of that workspace' using errcode = 'KF001';
    end if;
  end if;
  insert into kiln_private.workflows (account_id, workspace_id, name, graph)
    values (p_account_id, p_workspace_id, p_name, p_graph)
    returning * into v_row;
  return v_row;
exception
  when foreign_key_violation then
    raise exception 'account not found' using errcode = 'KN001';
  when check_violation or not_null_violation then
    raise exception 'invalid workflow: the name must be 1 to 200 characters and the graph an object' using errcode = 'KI001';
end;
$function$;
comment on function kiln.create_workflow(uuid,uuid,text,jsonb) is 'Saves a new workflow, version 1, owned by the workspace when p_workspace_id is given (KF001 unless the account is a member of it), else by the account; the graph is validated by the caller. Emits workflow.saved (trigger).';

CREATE OR REPLACE FUNCTION kiln.create_workspace(p_name text, p_owner_id uuid)
 RETURNS kiln_private.workspaces
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;
comment on function kiln.create_workspace(text,uuid) is 'Creates a workspace with its owner as first member.';

CREATE OR REPLACE FUNCTION kiln.defer_generation(p_id uuid, p_worker_id text, p_job_id bigint, p_error text, p_counted boolean DEFAULT true)
 RETURNS kiln_private.generations
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
begin
  update kiln_private.generations
    set status = 'pending', worker_id = null, job_id = null, last_error = left(p_error, 1000), updated_at = now(),
        -- An execution cut short by its worker (shutdown, lost lease) is not an attempt.
        attempts = case when p_counted then attempts else greatest(attempts - 1, 0) end,
        crash_streak = case when p_counted then 0 else crash_streak end
    where id = p_id and status = 'processing' and worker_id = p_worker_id and job_id = p_job_id
    returning * into v_gen;
  if found then
    if v_gen.run_id is not null then
      update kiln_private.workflow_run_outputs set status = 'queued', updated_at = now()
        where run_id = v_gen.run_id and output_node_id = v_gen.output_node_id and status = 'running';
    end if;
    -- The retry is a new job (this one, still locked, loses the key and ends): graphile-worker's
    -- backoff after a counted attempt (e^attempts seconds, at most e^10), at once after a shutdown.
    perform graphile_worker.add_job('generation__run', json_build_object('id', p_id),
      run_at => now() + case when p_counted then make_interval(secs => exp(least(v_gen.attempts, 10))) else interval '0' end,
      job_key => p_id::text, max_attempts => kiln_private.generation_job_attempts());
    perform kiln_private.nudge_waiting_generation(v_gen.account_id);
  end if;
  return v_gen;
end;
$function$;
comment on function kiln.defer_generation(uuid,text,bigint,text,boolean) is 'A transient failure: back to pending (freeing the slot, keeping any reservation) and a new job for the retry, after graphile-worker''s backoff when the attempt counts, at once when it does not (p_counted false: the worker shut down or lost its lease during it). Only the lease holder may defer.';

CREATE OR REPLACE FUNCTION kiln.delete_webhook_endpoint(p_scope_id uuid, p_id uuid)
 RETURNS boolean
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  with d as (delete from kiln_private.webhook_endpoints where id = p_id and scope_id = p_scope_id returning 1)
  select exists (select 1 from d);
$function$;
comment on function kiln.delete_webhook_endpoint(uuid,uuid) is 'Deletes an endpoint of the scope with its delivery log (queued jobs find nothing and end). Whether it existed.';

CREATE OR REPLACE FUNCTION kiln.delete_workflow(p_account_id uuid, p_workspace_id uuid, p_id uuid, p_if_versions bigint[])
 RETURNS kiln_private.workflows
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.workflows;
begin
  perform kiln.lock_workflow(p_account_id, p_workspace_id, p_id, p_if_versions);
  update kiln_private.workflows set deleted_at = now() where id = p_id returning * into v_row;
  return v_row;
end;
$function$;
comment on function kiln.delete_workflow(uuid,uuid,uuid,bigint[]) is 'Deletes a workflow of the caller''s scope (soft: deleted_at): it leaves lists and GET, cannot run or be retried; runs already started finish and stay readable by id. Emits workflow.deleted (trigger). KN001 / KV001 as kiln.lock_workflow.';

CREATE OR REPLACE FUNCTION kiln.end_session(p_key_hash bytea)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid;
begin
  select k.id into v_id from kiln_private.api_keys k
    where k.key_hash = p_key_hash and k.kind = 'session' and k.revoked_at is null;
  if v_id is null then
    return false;
  end if;
  -- A sign-out acts as the session it ends (the request names only its address and id).
  perform set_config('kiln.actor', (coalesce(nullif(current_setting('kiln.actor', true), '')::jsonb, '{}')
    || jsonb_build_object('type', 'session', 'id', v_id))::text, true);
  update kiln_private.api_keys set revoked_at = now() where id = v_id and revoked_at is null;
  return found;
end;
$function$;
comment on function kiln.end_session(bytea) is 'Sign-out: ends the session with this cookie hash (audited as session.deleted, by that session). False when there was none.';

CREATE OR REPLACE FUNCTION kiln.ensure_secret(p_name text, p_candidate bytea)
 RETURNS bytea
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_value bytea;
begin
  insert into kiln_private.secrets (name, value) values (p_name, p_candidate)
    on conflict (name) do nothing;
  select value into v_value from kiln_private.secrets where name = p_name;
  return v_value;
end;
$function$;
comment on function kiln.ensure_secret(text,bytea) is 'Returns the named secret, storing the candidate first when none exists (the first process to ask wins).';

CREATE OR REPLACE FUNCTION kiln.event_traceparent(p_event_id bigint)
 RETURNS text
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select coalesce(
    (select g.request->>'traceparent' from kiln_private.generations g where g.id = e.subject_id),
    (select g.request->>'traceparent' from kiln_private.generations g
       where g.run_id = e.subject_id and g.request ? 'traceparent' limit 1))
  from kiln_private.events e where e.id = p_event_id;
$function$;
comment on function kiln.event_traceparent(bigint) is 'The W3C traceparent stored with the request behind an event''s subject (a generation, or a run''s outputs), or null: a webhook delivery''s span joins that trace. Only read when tracing is on.';

CREATE OR REPLACE FUNCTION kiln.events_held_back(p_scope_id uuid, p_after_tx xid8, p_after_id bigint)
 RETURNS boolean
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- Committed events that kiln.read_events holds back while an older transaction is still open:
  -- the stream reads again shortly instead of waiting for the next notification.
  select exists (
    select 1 from kiln_private.events e
    where e.scope_id = p_scope_id and e.tx >= pg_snapshot_xmin(pg_current_snapshot())
      and (p_after_tx is null or (e.tx, e.id) > (p_after_tx, p_after_id)));
$function$;
comment on function kiln.events_held_back(uuid,xid8,bigint) is 'Whether the scope has committed events after the cursor that kiln.read_events does not return yet (an older transaction is still open).';

CREATE OR REPLACE FUNCTION kiln.events_horizon()
 RETURNS text
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select pg_snapshot_xmin(pg_current_snapshot())::text;
$function$;
comment on function kiln.events_horizon() is 'The oldest transaction still open: a GET /events stream opened without Last-Event-ID starts at (horizon, 0), so it sends what commits from now on and nothing earlier.';

CREATE OR REPLACE FUNCTION kiln.expire_objects(p_max_age_seconds bigint, p_limit integer)
 RETURNS TABLE(path text, location text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_at text := to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
  v_paths text[];
  v_locations text[];
  v_owners uuid[];
  v_visibilities text[];
begin
  with victims as (
    select o.path from kiln_private.objects o
    where o.owner_id is not null and o.created_at < now() - p_max_age_seconds * interval '1 second'
    order by o.created_at
    limit p_limit
    for update skip locked
  ), gone as (
    delete from kiln_private.objects o using victims v where o.path = v.path
    returning o.path, o.location, o.owner_id, o.visibility
  )
  select coalesce(array_agg(g.path), '{}'), coalesce(array_agg(g.location), '{}'), coalesce(array_agg(g.owner_id), '{}'),
         coalesce(array_agg(g.visibility), '{}')
    into v_paths, v_locations, v_owners, v_visibilities from gone g;
  if cardinality(v_paths) = 0 then
    return;
  end if;

  insert into kiln_private.expired_objects (path, owner_id, visibility)
    select p, o, v from unnest(v_paths, v_owners, v_visibilities) as u(p, o, v)
    on conflict do nothing;
  -- The bucket keys are deleted by the caller after this commits; noted first so a crash in
  -- between leaves them to the sweep.
  insert into kiln_private.object_intents (location)
    select l from unnest(v_locations) l where l is not null
    on conflict do nothing;

  -- Generations keep their record, status and cost; their result says when the image went.
  update kiln_private.generations g
    set result = g.result || jsonb_build_object('expiredAt', v_at)
    from unnest(v_paths) p
    where g.id = kiln_private.object_generation_id(p) and g.result->>'path' = p and not g.result ? 'expiredAt';
  update kiln_private.workflow_run_outputs o
    set result = o.result || jsonb_build_object('expiredAt', v_at)
    from unnest(v_paths) p
    where o.generation_id = kiln_private.object_generation_id(p) and o.result->>'path' = p and not o.result ? 'expiredAt';
  -- Write-backs on saved workflows: the output node's result loses its path (a later run must
  -- not read it as an input) and says when it expired.
  update kiln_private.workflows w
    set graph = jsonb_set(w.graph, '{nodes}', (
      select jsonb_agg(case when e.n->>'kind' = 'output' and e.n->'result'->>'path' = any (v_paths)
                            then e.n || jsonb_build_object('result', ((e.n->'result') - 'path') || jsonb_build_object('expiredAt', v_at))
                            else e.n end order by e.i)
      from jsonb_array_elements(w.graph->'nodes') with ordinality as e(n, i)))
    where w.id in (
        select r.workflow_id from kiln_private.workflow_runs r
        where r.id in (select (regexp_match(p, '^[0-9a-f-]{36}/workflows/([0-9a-f-]{36})/'))[1]::uuid from unnest(v_paths) p))
      and jsonb_typeof(w.graph->'nodes') = 'array'
      and exists (select 1 from jsonb_array_elements(w.graph->'nodes') n
                  where n->>'kind' = 'output' and n->'result'->>'path' = any (v_paths));

  return query select u.p, u.l from unnest(v_paths, v_locations) as u(p, l);
end;
$function$;
comment on function kiln.expire_objects(bigint,integer) is 'Retention: deletes up to p_limit account-owned objects older than p_max_age_seconds (seeds never), leaves tombstones (410 gone), notes their bucket keys for deletion, and marks the generations, run outputs and workflow write-backs that named them with expiredAt. Records, costs and the ledger are untouched. Returns the removed paths and bucket keys.';

CREATE OR REPLACE FUNCTION kiln.expire_workflow_run(p_run_id uuid, p_stale_seconds integer)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_run kiln_private.workflow_runs;
  v_late record;
  v_late_n int := 0;
  v_first text;
  v_stuck record;
  v_stuck_n int := 0;
begin
  select * into v_run from kiln_private.workflow_runs where id = p_run_id for update;
  if not found or v_run.settled + v_run.abandoned >= v_run.total then
    return json_build_object('open', false);
  end if;
  if clock_timestamp() < v_run.deadline then
    -- Too early (e.g. a rescheduled check): look again at the deadline.
    perform kiln_private.schedule_run_deadline(p_run_id, v_run.deadline);
    return json_build_object('open', true);
  end if;

  -- Outputs ready to run but never started within the window fail; the run fails with them.
  for v_late in
    select o.output_node_id, o.prompt_node_id, o.generation_id from kiln_private.workflow_run_outputs o
      where o.run_id = p_run_id and o.status = 'queued' and o.started_at is null
      order by o.ordinal
      for update
  loop
    v_first := coalesce(v_first, format('prompt "%s" → output "%s"', left(v_late.prompt_node_id, 200), left(v_late.output_node_id, 200)));
    perform kiln_private.end_generation(v_late.generation_id, format('not started within the run''s %s-second window', v_run.window_seconds));
    update kiln_private.workflow_run_outputs
      set status = 'failed', finished_at = clock_timestamp(), updated_at = now(),
          error = format('not started within the run''s %s-second window', v_run.window_seconds)
      where run_id = p_run_id and output_node_id = v_late.output_node_id;
    v_late_n := v_late_n + 1;
  end loop;
  if v_late_n = 0 then
    select format('prompt "%s" → output "%s"', left(prompt_node_id, 200), left(output_node_id, 200)) into v_first
      from kiln_private.workflow_run_outputs where run_id = p_run_id and status = 'waiting' order by ordinal limit 1;
  end if;
  if v_first is not null then
    perform kiln_private.fail_workflow_run(p_run_id, format(
      'the run did not finish within its %s-second window: %s was not started. Split the workflow, or run its nodes one by one through /generations.',
      v_run.window_seconds, v_first));
    perform kiln_private.note_workflow_progress(p_run_id, v_late_n);
  end if;

  -- Outputs that no job can finish any more (e.g. a worker died during a final attempt): fail them.
  for v_stuck in
    select g.id from kiln_private.workflow_run_outputs o
      join kiln_private.generations g on g.id = o.generation_id
      where o.run_id = p_run_id and o.status in ('queued', 'running')
        and (g.worker_id is null or not kiln_private.worker_alive(g.worker_id, p_stale_seconds))
        and not exists (
          select 1 from graphile_worker.jobs j
            where j.key = g.id::text and (j.locked_at is not null or j.attempts < j.max_attempts))
        and not exists (
          select 1 from graphile_worker.jobs j where j.id = g.job_id and j.locked_by is not null)
  loop
    perform kiln.fail_generation(v_stuck.id, kiln_private.unfinishable_message(v_stuck.id));
    v_stuck_n := v_stuck_n + 1;
  end loop;

  select * into v_run from kiln_private.workflow_runs where id = p_run_id;
  if v_run.settled + v_run.abandoned < v_run.total then
    -- Outputs still in flight: check again later (a dead worker's outputs are then taken over or failed).
    perform kiln_private.schedule_run_deadline(p_run_id, now() + make_interval(secs => greatest(p_stale_seconds, 5)));
  end if;
  return json_build_object('open', v_run.settled + v_run.abandoned < v_run.total, 'late', v_late_n, 'stuck', v_stuck_n);
end;
$function$;
comment on function kiln.expire_workflow_run(uuid,integer) is 'The run-window check: after the deadline, outputs not started fail the run (with a message saying so), and outputs no job can finish any more (read from the graphile_worker.jobs view) are failed; re-checks later while outputs are in flight.';

CREATE OR REPLACE FUNCTION kiln.fail_generation(p_id uuid, p_error text)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
  v_out kiln_private.workflow_run_outputs;
  v_run_id uuid;
  v_error text := left(coalesce(nullif(p_error, ''), 'generation failed'), 1000);
begin
  select run_id into v_run_id from kiln_private.generations where id = p_id;
  if not found then
    raise exception 'generation not found' using errcode = 'KN001';
  end if;
  if v_run_id is not null then
    perform 1 from kiln_private.workflow_runs where id = v_run_id for update;
  end if;
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if not kiln_private.end_generation(p_id, v_error) then
    return json_build_object('applied', false, 'status', v_gen.status);
  end if;
  if v_run_id is not null then
    -- The run fails at its first failed output; what has not started is abandoned.
    update kiln_private.workflow_run_outputs
      set status = 'failed', error = v_error, finished_at = clock_timestamp(), updated_at = now()
      where run_id = v_run_id and output_node_id = v_gen.output_node_id
      returning * into v_out;
    perform kiln_private.fail_workflow_run(v_run_id,
      format('output "%s" of prompt "%s" failed: %s', left(v_out.output_node_id, 200), left(v_out.prompt_node_id, 200), v_error));
    perform kiln_private.note_workflow_progress(v_run_id, 1);
  end if;
  perform kiln_private.nudge_waiting_generation(v_gen.account_id);
  return json_build_object('applied', true, 'status', 'failed');
end;
$function$;
comment on function kiln.fail_generation(uuid,text) is 'Fails a generation with a client-safe message and releases its reservation in one call; a run output also fails its run (not-started outputs are abandoned). Idempotent.';

CREATE OR REPLACE FUNCTION kiln.filter_ended_generations(p_ids uuid[])
 RETURNS uuid[]
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select coalesce(array_agg(g.id), '{}') from kiln_private.generations g
  where g.id = any (p_ids) and g.status in ('completed', 'failed');
$function$;
comment on function kiln.filter_ended_generations(uuid[]) is 'Those of the given generations that have ended (completed or failed): a worker aborts the ones it still runs — the backstop for a kiln:cancel notification it missed.';

CREATE OR REPLACE FUNCTION kiln.find_object(p_path text)
 RETURNS TABLE(path text, owner_id uuid, content_type text, format text, width integer, height integer, byte_size integer, visibility text, created_at timestamp with time zone, backend text, location text, sha256 bytea, data bytea, expired_at timestamp with time zone)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select o.path, o.owner_id, o.content_type, o.format, o.width, o.height, o.byte_size, o.visibility, o.created_at,
         o.backend, o.location, o.sha256, o.data, null::timestamptz
  from kiln_private.objects o where o.path = p_path
  union all
  select e.path, e.owner_id, null, null, null, null, null, e.visibility, null, null, null, null, null, e.expired_at
  from kiln_private.expired_objects e
  where e.path = p_path and not exists (select 1 from kiln_private.objects o where o.path = p_path);
$function$;
comment on function kiln.find_object(text) is 'One object with its backend, location and (postgres backend) bytes; or, for a path retention removed, a row with only expired_at set; no row when it never existed. Ownership is the caller''s check.';

CREATE OR REPLACE FUNCTION kiln.forget_object_intents(p_locations text[])
 RETURNS integer
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  with gone as (
    delete from kiln_private.object_intents i
    where i.location = any (p_locations)
    returning 1)
  select count(*)::int from gone;
$function$;
comment on function kiln.forget_object_intents(text[]) is 'Drops the notes of bucket keys whose bytes were deleted (claimed by the sweep, or given up by retention: no row can reference either).';

CREATE OR REPLACE FUNCTION kiln.freeze_event_body(p_event_id bigint, p_body text)
 RETURNS text
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- First writer wins: every later delivery and stream sends the same bytes.
  with u as (update kiln_private.events set body = p_body where id = p_event_id and body is null returning body)
  select coalesce((select body from u), (select body from kiln_private.events where id = p_event_id));
$function$;
comment on function kiln.freeze_event_body(bigint,text) is 'Stores an event''s rendered message body unless one is stored already; returns the stored one.';

CREATE OR REPLACE FUNCTION kiln.get_daily_usage(p_account_id uuid, p_workspace_id uuid, p_from date, p_to date)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
declare
  v_anchor timestamptz;
  v_visible boolean := true;
  v_period timestamptz;
  v_from date := p_from;
  v_to date := p_to;
  v_pool uuid := coalesce(p_workspace_id, p_account_id);
  v_days json;
begin
  if p_workspace_id is null then
    select a.period_anchor into v_anchor from kiln_private.accounts a where a.id = p_account_id;
  else
    -- A workspace's spend is shown to its current members only (a key whose owner left sees none).
    select w.plan_period_anchor,
           exists (select 1 from kiln_private.workspace_members m
                   where m.workspace_id = w.id and m.account_id = p_account_id and m.left_at is null)
      into v_anchor, v_visible
      from kiln_private.workspaces w where w.id = p_workspace_id;
  end if;
  if v_anchor is null then
    return null;
  end if;
  if v_from is null then
    -- The current period, as GET /usage counts it: [period start, next period start) in UTC days.
    v_period := kiln_private.period_start(v_anchor, now());
    v_from := (v_period at time zone 'UTC')::date;
    v_to := ((v_period + interval '1 month') at time zone 'UTC')::date - 1;
  elsif v_to is null then
    v_to := (now() at time zone 'UTC')::date;
  end if;
  if v_from > v_to or v_to - v_from > 365 then
    raise exception 'from must not be after to, and the range at most 366 days' using errcode = 'KI001';
  end if;
  select coalesce(json_agg(json_build_object(
           'day', to_char(x.day, 'YYYY-MM-DD'), 'model_id', x.model_id,
           'spend_micros', x.spend, 'charges', x.charges, 'held_micros', x.held) order by x.day, x.model_id), '[]')
    into v_days
    from (select d.day, d.model_id, sum(d.spend)::bigint as spend, sum(d.charges)::bigint as charges, sum(d.held)::bigint as held
          from (-- Ended charges from the rollup (a released one counts nothing).
                select r.day, r.model_id, r.spend_micros as spend, r.settled_charges as charges, 0::bigint as held
                from kiln_private.charge_days r
                where v_visible and r.pool_id = v_pool and r.day between v_from and v_to
                union all
                -- Reservations still open, at their reserved amount (charges_open_idx).
                select (c.created_at at time zone 'UTC')::date, c.model_id, c.reserved_micros, 1, c.reserved_micros
                from kiln_private.charges c
                where v_visible and c.status = 'reserved' and c.pool_id = v_pool
                  and c.created_at >= (v_from::timestamp at time zone 'UTC')
                  and c.created_at < ((v_to + 1)::timestamp at time zone 'UTC')) d
          group by d.day, d.model_id
          having sum(d.charges) > 0) x;
  return json_build_object(
    'scope', case when p_workspace_id is null then 'personal' else 'workspace' end,
    'workspace_id', p_workspace_id,
    'from', to_char(v_from, 'YYYY-MM-DD'),
    'to', to_char(v_to, 'YYYY-MM-DD'),
    'days', v_days);
end;
$function$;
comment on function kiln.get_daily_usage(uuid,uuid,date,date) is 'The GET /usage/daily body: per UTC day and model, what the caller''s billing scope (the personal pool, or a workspace-bound caller''s Team pool) used — settled charges at their settled amount (kiln_private.charge_days) plus reservations still open at their reserved amount (charges_open_idx), on the day each charge was created. Without p_from: the current period; without p_to: through today. Null when the account (or workspace) does not exist; no days for a workspace the caller is no longer a member of. KI001 for from > to or more than 366 days.';

CREATE OR REPLACE FUNCTION kiln.get_daily_usage_for_callers(p_account_ids uuid[], p_workspace_ids uuid[], p_froms date[], p_tos date[])
 RETURNS TABLE(ord integer, body json)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select c.ord::int, kiln.get_daily_usage(c.account_id, p_workspace_ids[c.ord], p_froms[c.ord], p_tos[c.ord])
  from unnest(p_account_ids) with ordinality c(account_id, ord);
$function$;
comment on function kiln.get_daily_usage_for_callers(uuid[],uuid[],date[],date[]) is 'GET /usage/daily for a batch of callers already authorized: the daily usage of each one''s billing scope (kiln.get_daily_usage; the caller checks the range first), by 1-based ord. Read-only: runs on a streaming replica.';

CREATE OR REPLACE FUNCTION kiln.get_daily_usage_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_froms date[], p_tos date[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select r.*, case when r.status = 'ok' then kiln.get_daily_usage(r.account_id, r.workspace_id, p_froms[r.ord], p_tos[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.get_daily_usage_for_keys(bytea[],integer,date[],date[]) is 'GET /usage/daily for a batch in one transaction: authorizes each key (read scope, the per-key read bucket at p_read_rpm and the key''s own rpm) and, when admitted, returns the daily usage of its billing scope (kiln.get_daily_usage; the caller checks the range first).';

CREATE OR REPLACE FUNCTION kiln.get_generation(p_account_id uuid, p_id uuid, p_origins text[])
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select body from kiln.get_generations(array[p_account_id], array[p_id], p_origins);
$function$;
comment on function kiln.get_generation(uuid,uuid,text[]) is 'kiln.get_generations for one: a generation''s state for its owner, when created through one of the given origins; null otherwise.';

CREATE OR REPLACE FUNCTION kiln.get_generations(p_account_ids uuid[], p_ids uuid[], p_origins text[])
 RETURNS TABLE(ord integer, body json)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
begin
  return query
    select s.i, kiln_private.generation_body(g)
    from generate_subscripts(p_ids, 1) as s(i)
    join kiln_private.generations g
      on g.id = p_ids[s.i] and g.account_id = p_account_ids[s.i] and g.origin = any (p_origins);
end;
$function$;
comment on function kiln.get_generations(uuid[],uuid[],text[]) is 'get_generation for many (account, id) pairs in one call (the API batches concurrent polls); rows only for the visible ones.';

CREATE OR REPLACE FUNCTION kiln.get_key(p_account_id uuid, p_workspace_id uuid, p_caller_scopes text[], p_key_id uuid)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_key kiln_private.api_keys;
begin
  select * into v_key from kiln_private.visible_key(p_account_id, p_workspace_id, p_key_id);
  if v_key.id is null then
    raise exception 'key not found' using errcode = 'KN001';
  end if;
  perform kiln_private.require_key_rights(p_caller_scopes, v_key.scopes);
  return kiln_private.key_json(v_key, kiln_private.key_used(v_key));
end;
$function$;
comment on function kiln.get_key(uuid,uuid,text[],uuid) is 'GET /keys/{id}: one key of the caller''s billing scope (never its hash). KN001 not the caller''s scope''s, KF002 a key with a scope the caller (p_caller_scopes) lacks.';

CREATE OR REPLACE FUNCTION kiln.get_object(p_path text)
 RETURNS TABLE(path text, owner_id uuid, content_type text, format text, width integer, height integer, byte_size integer, visibility text, created_at timestamp with time zone, data bytea)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select o.path, o.owner_id, o.content_type, o.format, o.width, o.height, o.byte_size, o.visibility, o.created_at, o.data
  from kiln_private.objects o where o.path = p_path;
$function$;
comment on function kiln.get_object(text) is 'One stored object with its bytes (no row when absent). Ownership is the caller''s check.';

CREATE OR REPLACE FUNCTION kiln.get_usage(p_account_id uuid, p_workspace_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select usage from kiln_private.usage_rows(p_account_id, p_workspace_id, null);
$function$;
comment on function kiln.get_usage(uuid,uuid) is 'The GET /usage body for an account, and for a workspace-bound key its Team pool (workspace_* null when the plan is not active or the member left). Null when the account does not exist.';

CREATE OR REPLACE FUNCTION kiln.get_webhook_endpoint(p_scope_id uuid, p_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select kiln_private.webhook_endpoint_json(e) from kiln_private.webhook_endpoints e where e.id = p_id and e.scope_id = p_scope_id;
$function$;
comment on function kiln.get_webhook_endpoint(uuid,uuid) is 'One endpoint of the scope (no secret); null when absent or another scope''s.';

CREATE OR REPLACE FUNCTION kiln.get_workflow(p_id uuid, p_account_id uuid, p_workspace_id uuid)
 RETURNS SETOF kiln_private.workflows
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select w.* from kiln_private.workflows w
  where w.id = p_id and w.deleted_at is null
    and (p_account_id is null or w.scope_id = any (kiln_private.workflow_scopes(p_account_id, p_workspace_id)));
$function$;
comment on function kiln.get_workflow(uuid,uuid,uuid) is 'One workflow that is not deleted, with its stored graph (outputs written back by runs included), when it belongs to the caller''s scope (kiln_private.workflow_scopes); p_account_id null = operator access.';

CREATE OR REPLACE FUNCTION kiln.get_workflow_run(p_account_id uuid, p_workflow_id uuid, p_run_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'id', r.id,
    'workflowId', r.workflow_id,
    'status', r.status,
    'total', r.total,
    'settled', r.settled,
    'error', r.error,
    'createdAt', to_char(r.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'completedAt', to_char(r.completed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'retryOf', r.retry_of,
    -- Past its window with outputs never started: the reader runs the window check first.
    'expired', r.status in ('pending', 'running') and now() > r.deadline and exists (
      select 1 from kiln_private.workflow_run_outputs o
      where o.run_id = r.id and (o.status = 'waiting' or (o.status = 'queued' and o.started_at is null))),
    'results', (
      select coalesce(json_agg(json_build_object(
               'promptNodeId', o.prompt_node_id,
               'outputNodeId', o.output_node_id,
               'type', o.type,
               'status', o.status,
               'label', o.spec->>'label',
               'platform', o.spec->>'platform',
               'path', o.result->>'path',
               'mediaType', o.result->>'mediaType',
               'code', o.result->>'code',
               'error', o.error,
               'costMicros', coalesce(o.cost_micros, 0),
               'model', o.result->>'model',
               'expiredAt', o.result->>'expiredAt')
             order by o.finished_at, o.ordinal), '[]'::json)
      from kiln_private.workflow_run_outputs o
      where o.run_id = r.id and o.status in ('completed', 'failed', 'skipped')))
  from kiln_private.workflow_runs r
  where r.id = p_run_id and r.account_id = p_account_id and r.workflow_id = p_workflow_id;
$function$;
comment on function kiln.get_workflow_run(uuid,uuid,uuid) is 'A run''s state (with the run it retried, if any) and its settled results (in settling order, with expiredAt once retention removed an image) for its owner, when it belongs to that workflow; null otherwise.';

CREATE OR REPLACE FUNCTION kiln.get_workflow_run_graph(p_account_id uuid, p_workflow_id uuid, p_run_id uuid)
 RETURNS jsonb
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- Structure only (ids, kinds, labels, output types, models, platforms): prompt and text values
  -- stay out, as in every other run answer.
  select jsonb_build_object(
    'runId', r.id,
    'workflowId', r.workflow_id,
    'nodes', coalesce((
      select jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
               'id', n->>'id', 'kind', n->>'kind', 'label', n->>'label', 'output', n->>'output',
               'model', n->>'model', 'platform', n->>'platform')) order by i)
      from jsonb_array_elements(case when jsonb_typeof(r.snapshot->'nodes') = 'array' then r.snapshot->'nodes' else '[]' end) with ordinality as x(n, i)
    ), '[]'::jsonb),
    'edges', coalesce((
      select jsonb_agg(jsonb_build_object('from', e->>'from', 'to', e->>'to') order by i)
      from jsonb_array_elements(case when jsonb_typeof(r.snapshot->'edges') = 'array' then r.snapshot->'edges' else '[]' end) with ordinality as x(e, i)
    ), '[]'::jsonb))
  from kiln_private.workflow_runs r
  where r.id = p_run_id and r.workflow_id = p_workflow_id and r.account_id = p_account_id;
$function$;
comment on function kiln.get_workflow_run_graph(uuid,uuid,uuid) is 'The graph of a run''s snapshot (node ids, kinds, labels, output types, models, platforms and edges; no prompt or text values) for the account that owns the run; null when there is none.';

CREATE OR REPLACE FUNCTION kiln.get_workflow_run_graphs_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_workflow_ids uuid[], p_run_ids uuid[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body jsonb)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select r.*, case when r.status = 'ok' then kiln.get_workflow_run_graph(r.account_id, p_workflow_ids[r.ord], p_run_ids[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.get_workflow_run_graphs_for_keys(bytea[],integer,uuid[],uuid[]) is 'GET /workflows/{id}/runs/{runId}/graph for a batch in one transaction: authorizes each key (read scope, the per-key read bucket and the key''s own rpm) and, when admitted, returns the graph of that run of the key''s account (kiln.get_workflow_run_graph; null body when there is none).';

CREATE OR REPLACE FUNCTION kiln.get_workflow_runs_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_workflow_ids uuid[], p_run_ids uuid[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select r.*, case when r.status = 'ok' then kiln.get_workflow_run(r.account_id, p_workflow_ids[r.ord], p_run_ids[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.get_workflow_runs_for_keys(bytea[],integer,uuid[],uuid[]) is 'GET /workflows/{id}/runs/{runId} for a batch in one transaction: authorizes each key (read scope, the per-key read bucket and the key''s own rpm) and, when admitted, returns that run of the key''s account (kiln.get_workflow_run; null body when there is none).';

CREATE OR REPLACE FUNCTION kiln.get_workflows_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_ids uuid[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select r.*, case when r.status = 'ok' then (select to_json(w) from kiln.get_workflow(p_ids[r.ord], r.account_id, r.workspace_id) w) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.get_workflows_for_keys(bytea[],integer,uuid[]) is 'GET /workflows/{id} for a batch in one transaction: authorizes each key (read scope, the per-key read bucket and the key''s own rpm) and, when admitted, returns that workflow of the key''s scope as its row in JSON (kiln.get_workflow; null body when there is none).';

CREATE OR REPLACE FUNCTION kiln.key_carries_scope(p_key_id uuid, p_scope text)
 RETURNS boolean
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select coalesce((select p_scope = any (k.scopes) from kiln_private.api_keys k where k.id = p_key_id), false);
$function$;
comment on function kiln.key_carries_scope(uuid,text) is 'Whether a key (or session) was given a scope, whatever its user may use: a refused admin request with the admin scope is a user who is not an admin, and says so.';

CREATE OR REPLACE FUNCTION kiln.link_identity(p_issuer text, p_subject text, p_account_id uuid, p_workspace_id uuid, p_email text DEFAULT NULL::text)
 RETURNS kiln_private.identities
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.identities;
begin
  if p_issuer is null or p_subject is null or p_issuer = '' or p_subject = '' then
    raise exception 'issuer and subject are required' using errcode = 'KI001';
  end if;
  perform 1 from kiln_private.accounts where id = p_account_id;
  if not found then
    raise exception 'account not found' using errcode = 'KN001';
  end if;
  if p_workspace_id is not null then
    -- Any current member may bill their own sign-in to the Team pool (as in the application);
    -- whether the plan is active is checked on each call, not here.
    perform 1 from kiln_private.workspace_members
      where workspace_id = p_workspace_id and account_id = p_account_id and left_at is null;
    if not found then
      raise exception 'the account is not a member of that workspace' using errcode = 'KF001';
    end if;
  end if;
  insert into kiln_private.identities as i (issuer, subject, account_id, email, workspace_id)
    values (p_issuer, p_subject, p_account_id, p_email, p_workspace_id)
    on conflict (issuer, subject) do update
      set account_id = excluded.account_id,
          workspace_id = excluded.workspace_id,
          email = coalesce(excluded.email, i.email)
    returning * into v_row;
  return v_row;
exception
  when check_violation then
    raise exception 'invalid identity (issuer at most 2048 characters, subject at most 255)' using errcode = 'KI001';
end;
$function$;
comment on function kiln.link_identity(text,text,uuid,uuid,text) is 'Links (or re-links) an OIDC identity to an account, optionally billing a Team workspace the account is a current member of. KN001 unknown account, KF001 not a member, KI001 bad issuer/subject.';

CREATE OR REPLACE FUNCTION kiln.list_audit(p_scope_id uuid, p_limit integer, p_before uuid, p_action text)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  with page as (
    select l, l.id from kiln_private.audit_log l
    where l.scope_id = p_scope_id
      and (p_before is null or l.id < p_before)
      and (p_action is null or l.action = p_action)
    order by l.id desc
    limit p_limit + 1)
  select json_build_object(
    'data', coalesce((select json_agg(kiln_private.audit_json(p.l) order by p.id desc)
                      from (select * from page order by id desc limit p_limit) p), '[]'),
    'nextCursor', case when (select count(*) from page) > p_limit
                       then (select id from page order by id desc offset p_limit - 1 limit 1) end);
$function$;
comment on function kiln.list_audit(uuid,integer,uuid,text) is 'A page of a billing scope''s audit entries, newest first (p_before = the previous page''s nextCursor), optionally of one action.';

CREATE OR REPLACE FUNCTION kiln.list_generations(p_account_id uuid, p_workspace_id uuid, p_origin text, p_limit integer, p_before_at timestamp with time zone, p_before_id uuid, p_statuses text[], p_types text[], p_model_id text, p_since timestamp with time zone)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
declare
  v_pool uuid := coalesce(p_workspace_id, p_account_id);
  v_limit int := least(greatest(coalesce(p_limit, 20), 1), 100);
  v_at timestamptz := coalesce(p_before_at, 'infinity');
  v_id uuid := coalesce(p_before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
  v_since timestamptz := coalesce(p_since, '-infinity');
  v_statuses text[] := coalesce(p_statuses, array['pending', 'processing', 'completed', 'failed']);
  v_types text[] := coalesce(p_types, array['image', 'code']);
  v_ids uuid[];
  v_next json;
  v_data json;
begin
  if p_model_id is null then
    select array_agg(h.id order by h.created_at desc, h.id desc) into v_ids
    from (select h.created_at, h.id
          from unnest(v_types) t(type) cross join unnest(v_statuses) s(status)
          cross join lateral (
            select g.created_at, g.id from kiln_private.generations g
            where g.account_id = p_account_id and coalesce(g.workspace_id, g.account_id) = v_pool
              and g.origin = p_origin and g.type = t.type and g.status = s.status
              and (g.created_at, g.id) < (v_at, v_id) and g.created_at >= v_since
            order by g.created_at desc, g.id desc
            limit v_limit + 1) h
          order by h.created_at desc, h.id desc
          limit v_limit + 1) h;
  else
    select array_agg(h.id order by h.created_at desc, h.id desc) into v_ids
    from (select h.created_at, h.id
          from unnest(v_types) t(type) cross join unnest(v_statuses) s(status)
          cross join lateral (
            select g.created_at, g.id from kiln_private.generations g
            where g.account_id = p_account_id and coalesce(g.workspace_id, g.account_id) = v_pool
              and g.origin = p_origin and g.model_id = p_model_id and g.type = t.type and g.status = s.status
              and (g.created_at, g.id) < (v_at, v_id) and g.created_at >= v_since
            order by g.created_at desc, g.id desc
            limit v_limit + 1) h
          order by h.created_at desc, h.id desc
          limit v_limit + 1) h;
  end if;
  v_ids := coalesce(v_ids, '{}');
  select coalesce(json_agg(kiln_private.generation_body(g) order by g.created_at desc, g.id desc), '[]'),
         -- More than a page: the last item of the page is where the next one starts.
         case when cardinality(v_ids) > v_limit then
           (select json_build_object('at', (extract(epoch from l.created_at) * 1000000)::bigint::text, 'id', l.id)
            from kiln_private.generations l where l.id = v_ids[v_limit]) end
    into v_data, v_next
    from kiln_private.generations g
    where g.id = any (v_ids[1:v_limit]);
  return json_build_object('data', v_data, 'next', v_next);
end;
$function$;
comment on function kiln.list_generations(uuid,uuid,text,integer,timestamp with time zone,uuid,text[],text[],text,timestamp with time zone) is 'A page of an account''s generations in one billing scope (p_workspace_id null = the personal budget) created through p_origin, newest first, before (p_before_at, p_before_id) (keyset), filtered by statuses, types, model and created at or after p_since (null = any): {data: [kiln_private.generation_body], next: {at: epoch microseconds, id} | null}. At most 2 × 4 index probes of a page each.';

CREATE OR REPLACE FUNCTION kiln.list_generations_for_callers(p_account_ids uuid[], p_workspace_ids uuid[], p_origin text, p_limits integer[], p_before_ats timestamp with time zone[], p_before_ids uuid[], p_statuses text[], p_types text[], p_model_ids text[], p_sinces timestamp with time zone[])
 RETURNS TABLE(ord integer, body json)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- Per request, statuses and types come as comma-separated lists (null = any).
  select c.ord::int, kiln.list_generations(
           c.account_id, p_workspace_ids[c.ord], p_origin, p_limits[c.ord], p_before_ats[c.ord], p_before_ids[c.ord],
           string_to_array(p_statuses[c.ord], ','), string_to_array(p_types[c.ord], ','), p_model_ids[c.ord], p_sinces[c.ord])
  from unnest(p_account_ids) with ordinality c(account_id, ord);
$function$;
comment on function kiln.list_generations_for_callers(uuid[],uuid[],text,integer[],timestamp with time zone[],uuid[],text[],text[],text[],timestamp with time zone[]) is 'GET /generations for a batch of callers already authorized (account, billing scope): the page of each (kiln.list_generations), by 1-based ord. Read-only: runs on a streaming replica.';

CREATE OR REPLACE FUNCTION kiln.list_generations_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_origin text, p_limits integer[], p_before_ats timestamp with time zone[], p_before_ids uuid[], p_statuses text[], p_types text[], p_model_ids text[], p_sinces timestamp with time zone[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  -- Per request, statuses and types come as comma-separated lists (null = any).
  select r.*, case when r.status = 'ok' then kiln.list_generations(
           r.account_id, r.workspace_id, p_origin, p_limits[r.ord], p_before_ats[r.ord], p_before_ids[r.ord],
           string_to_array(p_statuses[r.ord], ','), string_to_array(p_types[r.ord], ','), p_model_ids[r.ord], p_sinces[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.list_generations_for_keys(bytea[],integer,text,integer[],timestamp with time zone[],uuid[],text[],text[],text[],timestamp with time zone[]) is 'GET /generations for a batch in one transaction: authorizes each key (read scope, the per-key read bucket at p_read_rpm and the key''s own rpm) and, when admitted, returns that page of the key''s account''s generations in the key''s billing scope created through p_origin (kiln.list_generations).';

CREATE OR REPLACE FUNCTION kiln.list_identities(p_account_id uuid)
 RETURNS SETOF kiln_private.identities
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select * from kiln_private.identities where account_id = p_account_id order by created_at;
$function$;
comment on function kiln.list_identities(uuid) is 'The OIDC identities linked to an account, oldest first.';

CREATE OR REPLACE FUNCTION kiln.list_keys(p_account_id uuid, p_workspace_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object('data', coalesce(json_agg(kiln_private.key_json(k, kiln_private.key_used(k)) order by k.created_at desc, k.id), '[]'))
  from kiln_private.api_keys k
  where k.kind = 'key'
    and case when p_workspace_id is null then k.account_id = p_account_id and k.workspace_id is null
             else k.workspace_id = p_workspace_id and (k.account_id = p_account_id or exists (
               select 1 from kiln_private.workspace_members m
               where m.workspace_id = p_workspace_id and m.account_id = p_account_id and m.left_at is null
                 and m.role in ('owner', 'admin'))) end;
$function$;
comment on function kiln.list_keys(uuid,uuid) is 'GET /keys: the keys of the caller''s billing scope (kiln_private.visible_key''s rule), newest first, revoked ones included.';

CREATE OR REPLACE FUNCTION kiln.list_objects_to_move(p_to text, p_after text, p_limit integer)
 RETURNS TABLE(path text, backend text, location text, sha256 bytea, byte_size integer, content_type text)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select o.path, o.backend, o.location, o.sha256, o.byte_size, o.content_type
  from kiln_private.objects o
  where o.backend = case p_to when 's3' then 'postgres' else 's3' end and o.path > coalesce(p_after, '')
  order by o.path
  limit p_limit;
$function$;
comment on function kiln.list_objects_to_move(text,text,integer) is 'store migrate: the next objects (by path, after p_after) not yet on backend p_to.';

CREATE OR REPLACE FUNCTION kiln.list_webhook_deliveries(p_scope_id uuid, p_endpoint_id uuid, p_limit integer, p_before_at timestamp with time zone, p_before_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select case when not exists (select 1 from kiln_private.webhook_endpoints e where e.id = p_endpoint_id and e.scope_id = p_scope_id) then null
  else (select coalesce(json_agg(json_build_object(
      'id', d.id, 'eventId', ev.id::text, 'event', ev.type, 'status', d.status, 'attempts', d.attempts,
      'lastStatusCode', d.last_status_code, 'lastError', d.last_error,
      'createdAt', to_char(d.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
      'deliveredAt', to_char(d.delivered_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'nextAttemptAt', case when d.status = 'pending' then to_char(d.next_attempt_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') end)
      order by d.created_at desc, d.id desc), '[]')
    from (select * from kiln_private.webhook_deliveries d
          where d.endpoint_id = p_endpoint_id
            and (p_before_at is null or (d.created_at, d.id) < (p_before_at, p_before_id))
          order by d.created_at desc, d.id desc limit p_limit) d
    join kiln_private.events ev on ev.id = d.event_id) end;
$function$;
comment on function kiln.list_webhook_deliveries(uuid,uuid,integer,timestamp with time zone,uuid) is 'A page of an endpoint''s deliveries, newest first, before a (created_at, id) cursor, each with its event''s id (the message''s webhook-id is derived from it); null when the endpoint is not the scope''s.';

CREATE OR REPLACE FUNCTION kiln.list_webhook_endpoints(p_scope_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select coalesce(json_agg(kiln_private.webhook_endpoint_json(e) order by e.created_at, e.id), '[]')
  from kiln_private.webhook_endpoints e where e.scope_id = p_scope_id;
$function$;
comment on function kiln.list_webhook_endpoints(uuid) is 'Every endpoint of a scope, oldest first (no secrets).';

CREATE OR REPLACE FUNCTION kiln.list_workflow_runs(p_account_id uuid, p_workspace_id uuid, p_workflow_id uuid, p_limit integer, p_offset integer)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- A deleted workflow's runs stay listed: they remain readable.
  select case when exists (select 1 from kiln_private.workflows w
                           where w.id = p_workflow_id and w.scope_id = any (kiln_private.workflow_scopes(p_account_id, p_workspace_id))) then (
    select coalesce(json_agg(json_build_object(
             'id', r.id,
             'status', r.status,
             'progress', json_build_object('total', r.total, 'completed', r.settled),
             'createdAt', to_char(r.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'completedAt', to_char(r.completed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'retryOf', r.retry_of)
           order by r.created_at desc, r.id desc), '[]'::json)
    from (select * from kiln_private.workflow_runs r
          where r.workflow_id = p_workflow_id and r.account_id = p_account_id
          order by r.created_at desc, r.id desc
          limit p_limit offset p_offset) r) end;
$function$;
comment on function kiln.list_workflow_runs(uuid,uuid,uuid,integer,integer) is 'A page of the account''s runs of a workflow of its scope (deleted or not), newest first (id, status, progress, createdAt, completedAt, retryOf); null when the workflow is not the scope''s.';

CREATE OR REPLACE FUNCTION kiln.list_workflow_runs_for_callers(p_account_ids uuid[], p_workspace_ids uuid[], p_workflow_ids uuid[], p_limits integer[], p_offsets integer[])
 RETURNS TABLE(ord integer, body json)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select c.ord::int, kiln.list_workflow_runs(c.account_id, p_workspace_ids[c.ord], p_workflow_ids[c.ord], p_limits[c.ord], p_offsets[c.ord])
  from unnest(p_account_ids) with ordinality c(account_id, ord);
$function$;
comment on function kiln.list_workflow_runs_for_callers(uuid[],uuid[],uuid[],integer[],integer[]) is 'GET /workflows/{id}/runs for a batch of callers already authorized: the page of runs of each (kiln.list_workflow_runs; null body when the workflow is not the caller''s scope''s), by 1-based ord. Read-only: runs on a streaming replica.';

CREATE OR REPLACE FUNCTION kiln.list_workflow_runs_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_workflow_ids uuid[], p_limits integer[], p_offsets integer[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select r.*, case when r.status = 'ok' then kiln.list_workflow_runs(r.account_id, r.workspace_id, p_workflow_ids[r.ord], p_limits[r.ord], p_offsets[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.list_workflow_runs_for_keys(bytea[],integer,uuid[],integer[],integer[]) is 'GET /workflows/{id}/runs for a batch in one transaction: authorizes each key (read scope, the per-key read bucket and the key''s own rpm) and, when admitted, returns that page of runs (kiln.list_workflow_runs; null body when the workflow is not the key''s scope''s).';

CREATE OR REPLACE FUNCTION kiln.list_workflows(p_account_id uuid, p_workspace_id uuid, p_limit integer, p_offset integer)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_scopes uuid[] := kiln_private.workflow_scopes(p_account_id, p_workspace_id);
begin
  if p_limit is null or p_limit < 1 or p_limit > 100 then
    raise exception 'limit must be an integer from 1 to 100' using errcode = 'KI001';
  end if;
  if p_offset is null or p_offset < 0 then
    raise exception 'offset must be an integer of at least 0' using errcode = 'KI001';
  end if;
  return (
    select coalesce(json_agg(json_build_object(
             'id', w.id,
             'name', w.name,
             'updated_at', to_char(w.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
             order by w.updated_at desc, w.id desc), '[]'::json)
    from (select * from kiln_private.workflows
          where scope_id = any (v_scopes) and deleted_at is null
          order by updated_at desc, id desc
          limit p_limit offset p_offset) w);
end;
$function$;
comment on function kiln.list_workflows(uuid,uuid,integer,integer) is 'The workflow summaries (id, name, updated_at) of the caller''s scope (kiln_private.workflow_scopes), deleted ones left out, most recently updated first. KI001 for a limit outside 1–100 or a negative offset.';

CREATE OR REPLACE FUNCTION kiln.list_workflows_for_callers(p_account_ids uuid[], p_workspace_ids uuid[], p_limits integer[], p_offsets integer[])
 RETURNS TABLE(ord integer, body json)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select c.ord::int, kiln.list_workflows(c.account_id, p_workspace_ids[c.ord], p_limits[c.ord], p_offsets[c.ord])
  from unnest(p_account_ids) with ordinality c(account_id, ord);
$function$;
comment on function kiln.list_workflows_for_callers(uuid[],uuid[],integer[],integer[]) is 'GET /workflows for a batch of callers already authorized: the page of each one''s scope''s workflows (kiln.list_workflows), by 1-based ord. Read-only: runs on a streaming replica.';

CREATE OR REPLACE FUNCTION kiln.list_workflows_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_limits integer[], p_offsets integer[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select r.*, case when r.status = 'ok' then kiln.list_workflows(r.account_id, r.workspace_id, p_limits[r.ord], p_offsets[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.list_workflows_for_keys(bytea[],integer,integer[],integer[]) is 'GET /workflows for a batch in one transaction: authorizes each key (read scope, the per-key read bucket at p_read_rpm and the key''s own rpm) and, when admitted, returns that page of the key''s scope''s workflows (kiln.list_workflows).';

CREATE OR REPLACE FUNCTION kiln.lock_workflow(p_account_id uuid, p_workspace_id uuid, p_id uuid, p_if_versions bigint[])
 RETURNS kiln_private.workflows
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.workflows;
begin
  select w.* into v_row from kiln_private.workflows w
    where w.id = p_id and w.deleted_at is null
      and (p_account_id is null or w.scope_id = any (kiln_private.workflow_scopes(p_account_id, p_workspace_id)))
    for update;
  if not found then
    raise exception 'workflow not found' using errcode = 'KN001';
  end if;
  perform kiln_private.check_workflow_version(v_row.version, p_if_versions);
  return v_row;
end;
$function$;
comment on function kiln.lock_workflow(uuid,uuid,uuid,bigint[]) is 'Locks a workflow of the caller''s scope for the rest of the transaction (a save reads the stored graph, keeps its written-back results and validates before it writes; a run''s write-back waits). KN001 when absent, deleted or another scope''s; KV001 when If-Match (p_if_versions) names another version. p_account_id null = operator access.';

CREATE OR REPLACE FUNCTION kiln.note_object_intent(p_location text)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  insert into kiln_private.object_intents (location) values (p_location)
  on conflict (location) do update set created_at = now(), claimed_at = null;
$function$;
comment on function kiln.note_object_intent(text) is 'Notes a bucket key about to be written, committed before the write: if no object row ever references it, the sweep deletes it after the grace period.';

CREATE OR REPLACE FUNCTION kiln.poll_generations(p_key_hashes bytea[], p_read_rpm integer, p_ids uuid[], p_origin text)
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select r.*, case when r.status = 'ok' then (
           select kiln_private.generation_body(g) from kiln_private.generations g
           where g.id = p_ids[r.ord] and g.account_id = r.account_id and g.origin = p_origin) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.poll_generations(bytea[],integer,uuid[],text) is 'GET /generations/{id} for a batch in one transaction: authorizes each key (read scope, the per-key read bucket at p_read_rpm and the key''s own rpm) and, when admitted, returns that generation of the key''s account created through p_origin (body null when there is none).';

CREATE OR REPLACE FUNCTION kiln.purge_audit_log(p_limit integer DEFAULT 10000)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_retention interval;
  v_n int;
begin
  if p_limit is null or p_limit < 1 then
    raise exception 'purge_audit_log needs a positive limit' using errcode = 'KI001';
  end if;
  select retention into v_retention from kiln_private.audit_policy;
  if v_retention is null then
    return 0; -- kept forever
  end if;
  perform set_config('kiln.audit_purge', 'on', true);
  delete from kiln_private.audit_log where id in (
    select id from kiln_private.audit_log where at < now() - v_retention order by at limit p_limit);
  get diagnostics v_n = row_count;
  perform set_config('kiln.audit_purge', 'off', true);
  return v_n;
end;
$function$;
comment on function kiln.purge_audit_log(integer) is 'The retention purge (housekeeping): deletes up to p_limit entries older than the owner''s retention (kiln_private.audit_policy), oldest first, and nothing when none is set. The only delete the append-only trigger lets through; the caller cannot choose what is old.';

CREATE OR REPLACE FUNCTION kiln.purge_events(p_age_seconds integer, p_limit integer)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_ids bigint[];
  v_n int;
begin
  if p_age_seconds is null or p_age_seconds < 1 or p_limit is null or p_limit < 1 then
    raise exception 'purge_events needs a positive age and limit' using errcode = 'KI001';
  end if;
  -- Oldest first, through events_occurred_at_idx. Rows another sweep holds are skipped, so sweeps
  -- in several workers split the work instead of waiting on each other.
  select coalesce(array_agg(id), '{}') into v_ids from (
    select e.id from kiln_private.events e
    where e.occurred_at < now() - make_interval(secs => p_age_seconds)
      and not exists (select 1 from kiln_private.webhook_deliveries d where d.event_id = e.id and d.status = 'pending')
    order by e.occurred_at
    limit p_limit
    for update of e skip locked
  ) old;
  if cardinality(v_ids) = 0 then
    return 0;
  end if;
  -- A delivery made pending since (redeliver, recover) is re-checked under its row lock and kept…
  delete from kiln_private.webhook_deliveries d where d.event_id = any (v_ids) and d.status <> 'pending';
  -- …and so is its event.
  with gone as (
    delete from kiln_private.events e where e.id = any (v_ids)
      and not exists (select 1 from kiln_private.webhook_deliveries d where d.event_id = e.id)
    returning 1
  )
  select count(*)::int into v_n from gone;
  return v_n;
end;
$function$;
comment on function kiln.purge_events(integer,integer) is 'Deletes up to p_limit events older than p_age_seconds, with their webhook deliveries and attempts; an event with a pending delivery stays until it ends. How many events (the workers'' sweep calls it while KILN_EVENT_RETENTION is set).';

CREATE OR REPLACE FUNCTION kiln.purge_idempotency_keys(p_limit integer)
 RETURNS integer
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  with gone as (
    delete from kiln_private.idempotency_keys
    where ctid = any (array(
      select ctid from kiln_private.idempotency_keys where expires_at <= now() order by expires_at limit p_limit))
    returning 1
  )
  select count(*)::int from gone;
$function$;
comment on function kiln.purge_idempotency_keys(integer) is 'Deletes up to p_limit expired Idempotency-Key records (the workers'' sweep calls it; a claim also takes over an expired record of its own key).';

CREATE OR REPLACE FUNCTION kiln.put_object(p_path text, p_owner_id uuid, p_data bytea, p_content_type text, p_format text, p_width integer, p_height integer, p_visibility text)
 RETURNS kiln.object_meta
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.objects;
begin
  insert into kiln_private.objects (path, owner_id, data, content_type, format, width, height, byte_size, visibility)
    values (p_path, p_owner_id, p_data, p_content_type, p_format, p_width, p_height, length(p_data), p_visibility)
    returning * into v_row;
  return row(v_row.path, v_row.owner_id, v_row.content_type, v_row.format, v_row.width, v_row.height,
             v_row.byte_size, v_row.visibility, v_row.created_at)::kiln.object_meta;
exception
  when unique_violation then
    raise exception 'an object already exists at that path' using errcode = 'KC001';
  when check_violation or not_null_violation or foreign_key_violation then
    raise exception 'invalid object' using errcode = 'KI001';
end;
$function$;
comment on function kiln.put_object(text,uuid,bytea,text,text,integer,integer,text) is 'Stores an image under a new path (never overwrites). Raises KC001 when the path is taken, KI001 for a bad path or metadata.';

CREATE OR REPLACE FUNCTION kiln.read_events(p_scope_id uuid, p_after_tx xid8, p_after_id bigint, p_since timestamp with time zone, p_limit integer)
 RETURNS TABLE(tx text, id bigint, type text, occurred_at text, data json, body text)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- Only transactions that have ended (below the snapshot's xmin) can be streamed: none of them
  -- can add an event any more, so nothing can appear behind the cursor later.
  select e.tx::text, e.id, e.type, to_char(e.occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), e.data, e.body
  from kiln_private.events e
  where e.scope_id = p_scope_id
    and e.tx < pg_snapshot_xmin(pg_current_snapshot())
    and (p_after_tx is null or (e.tx, e.id) > (p_after_tx, p_after_id))
    and (p_since is null or e.occurred_at >= p_since)
  order by e.tx, e.id
  limit p_limit;
$function$;
comment on function kiln.read_events(uuid,xid8,bigint,timestamp with time zone,integer) is 'Events of a scope after a (tx, id) cursor, in (tx, id) order, from ended transactions only (the stream''s gap-free order); p_since bounds a fresh start.';

CREATE OR REPLACE FUNCTION kiln.read_object_bytes(p_path text)
 RETURNS bytea
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select o.data from kiln_private.objects o where o.path = p_path and o.backend = 'postgres';
$function$;
comment on function kiln.read_object_bytes(text) is 'store migrate: the bytes of a postgres-backed object (null when absent or already moved).';

CREATE OR REPLACE FUNCTION kiln.record_idempotency_key(p_account_id uuid, p_operation text, p_key text, p_status integer, p_body jsonb)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  update kiln_private.idempotency_keys set response_status = p_status, response_body = p_body
    where account_id = p_account_id and operation = p_operation and key = p_key and response_body is null;
$function$;
comment on function kiln.record_idempotency_key(uuid,text,text,integer,jsonb) is 'Stores the answer of a request whose Idempotency-Key this transaction claimed (kiln.claim_idempotency_key).';

CREATE OR REPLACE FUNCTION kiln.record_key_expiries()
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_key record;
  v_n int := 0;
begin
  for v_key in
    update kiln_private.api_keys set expiry_recorded = true
    where id in (select id from kiln_private.api_keys
                 where expires_at <= now() and not expiry_recorded and kind = 'key'
                 order by expires_at limit 1000 for update skip locked)
    returning id, account_id, workspace_id, display_prefix, expires_at, revoked_at
  loop
    if v_key.revoked_at is null or v_key.revoked_at > v_key.expires_at then
      perform kiln_private.audit(coalesce(v_key.workspace_id, v_key.account_id), 'key.expired', 'key', v_key.id::text,
        jsonb_build_object('prefix', v_key.display_prefix, 'expiresAt', v_key.expires_at));
      v_n := v_n + 1;
    end if;
  end loop;
  return v_n;
end;
$function$;
comment on function kiln.record_key_expiries() is 'Housekeeping: one key.expired audit entry per key whose expiry has passed (once each; up to 1,000 a call). Expiry itself needs no sweep: an expired key already gets 401.';

CREATE OR REPLACE FUNCTION kiln.record_object(p_path text, p_owner_id uuid, p_data bytea, p_location text, p_sha256 bytea, p_byte_size integer, p_content_type text, p_format text, p_width integer, p_height integer, p_visibility text)
 RETURNS kiln.object_meta
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.objects;
begin
  insert into kiln_private.objects (path, owner_id, data, backend, location, sha256, content_type, format, width, height, byte_size, visibility)
    values (p_path, p_owner_id, p_data, case when p_location is null then 'postgres' else 's3' end, p_location, p_sha256,
            p_content_type, p_format, p_width, p_height, coalesce(length(p_data), p_byte_size), p_visibility)
    returning * into v_row;
  if p_location is not null then
    perform kiln_private.take_object_intent(p_location);
  end if;
  return row(v_row.path, v_row.owner_id, v_row.content_type, v_row.format, v_row.width, v_row.height,
             v_row.byte_size, v_row.visibility, v_row.created_at)::kiln.object_meta;
exception
  when unique_violation then
    raise exception 'an object already exists at that path' using errcode = 'KC001';
  when check_violation or not_null_violation or foreign_key_violation then
    raise exception 'invalid object' using errcode = 'KI001';
end;
$function$;
comment on function kiln.record_object(text,uuid,bytea,text,bytea,integer,text,text,integer,integer,text) is 'Stores an image''s row (never overwrites): bytes in p_data (postgres backend) or already written under p_location (s3; its intent note is cleared). Raises KC001 when the path is taken, KI001 for a bad path or metadata.';

CREATE OR REPLACE FUNCTION kiln.record_seed_object(p_path text, p_data bytea, p_location text, p_sha256 bytea, p_byte_size integer, p_content_type text, p_format text, p_width integer, p_height integer)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_old kiln_private.objects;
begin
  select * into v_old from kiln_private.objects where path = p_path for update;
  if found and v_old.byte_size = p_byte_size
     and coalesce(v_old.sha256, sha256(v_old.data)) is not distinct from p_sha256 then
    -- Unchanged: a copy written under p_location stays noted, so the sweep removes it.
    return false;
  end if;
  if found and v_old.location is not null then
    insert into kiln_private.object_intents (location) values (v_old.location) on conflict do nothing;
  end if;
  insert into kiln_private.objects (path, owner_id, data, backend, location, sha256, content_type, format, width, height, byte_size, visibility)
  values (p_path, null, p_data, case when p_location is null then 'postgres' else 's3' end, p_location, p_sha256,
          p_content_type, p_format, p_width, p_height, p_byte_size, 'public')
  on conflict (path) do update set
    data = excluded.data, backend = excluded.backend, location = excluded.location, sha256 = excluded.sha256,
    content_type = excluded.content_type, format = excluded.format,
    width = excluded.width, height = excluded.height, byte_size = excluded.byte_size;
  if p_location is not null then
    perform kiln_private.take_object_intent(p_location);
  end if;
  return true;
end;
$function$;
comment on function kiln.record_seed_object(text,bytea,text,bytea,integer,text,text,integer,integer) is 'Stores or refreshes a shared image under seed/ (ownerless, public) on either backend; false when the stored bytes are already these (compared by size and SHA-256). A replaced bucket key is noted for the sweep.';

CREATE OR REPLACE FUNCTION kiln.record_upstream(p_model_id text, p_ok boolean, p_error text, p_threshold integer, p_skip_seconds integer)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_minute timestamptz := date_trunc('minute', now());
  v_h kiln_private.upstream_health;
begin
  insert into kiln_private.upstream_minutes as m (model_id, minute, successes, failures)
    values (p_model_id, v_minute, p_ok::int, (not p_ok)::int)
    on conflict (model_id, minute) do update
      set successes = m.successes + excluded.successes, failures = m.failures + excluded.failures;
  if p_ok then
    -- Written at most once a second per entry while it stays healthy.
    insert into kiln_private.upstream_health as h (model_id, last_success_at) values (p_model_id, now())
      on conflict (model_id) do update
        set consecutive_failures = 0, skipped_until = null, trial_until = null, last_success_at = now(), updated_at = now()
        where h.consecutive_failures > 0 or h.skipped_until is not null or h.last_success_at is null
           or h.last_success_at < now() - interval '1 second';
    return 'healthy';
  end if;
  insert into kiln_private.upstream_health as h (model_id, consecutive_failures, last_error, last_error_at)
    values (p_model_id, 1, left(p_error, 300), now())
    on conflict (model_id) do update
      set consecutive_failures = h.consecutive_failures + 1, last_error = excluded.last_error,
          last_error_at = excluded.last_error_at, updated_at = now()
    returning * into v_h;
  if v_h.consecutive_failures >= greatest(p_threshold, 1) then
    -- Reached the threshold, or a trial call failed: skip it for another window.
    update kiln_private.upstream_health
      set skipped_until = now() + make_interval(secs => greatest(p_skip_seconds, 1)), trial_until = null
      where model_id = p_model_id;
    -- Keep an hour of per-minute counts (a cheap trim on the failure path only).
    delete from kiln_private.upstream_minutes where model_id = p_model_id and minute < now() - interval '1 hour';
    return 'skipped';
  end if;
  return 'failing';
end;
$function$;
comment on function kiln.record_upstream(text,boolean,text,integer,integer) is 'Records the outcome of one upstream call (after the adapter''s own retries) for a catalog entry: a success resets it; p_threshold consecutive failures (or a failed trial) skip it for p_skip_seconds. p_error is the client-safe summary.';

CREATE OR REPLACE FUNCTION kiln.record_webhook_attempt(p_delivery_id uuid, p_round integer, p_tries integer, p_status_code integer, p_error_class text, p_error text, p_duration_ms integer, p_retry_after integer, p_schedule integer[], p_disable_after_seconds integer)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_d kiln_private.webhook_deliveries;
  v_ok boolean := p_status_code between 200 and 299;
  v_delay int;
  v_gone boolean := p_status_code = 410;
  v_failing timestamptz;
begin
  select * into v_d from kiln_private.webhook_deliveries where id = p_delivery_id for update;
  if not found then return json_build_object('status', 'gone'); end if;
  insert into kiln_private.webhook_attempts (delivery_id, status_code, duration_ms, error_class)
    values (p_delivery_id, p_status_code, p_duration_ms, case when v_ok then null else p_error_class end);
  -- A redeliver or recover started a new round while this attempt was in flight: the attempt is
  -- logged, and the new round's own job decides the delivery.
  if v_d.round <> p_round or v_d.tries <> p_tries or v_d.status <> 'pending' then
    update kiln_private.webhook_deliveries set attempts = attempts + 1 where id = p_delivery_id;
    return json_build_object('status', 'stale');
  end if;
  if v_ok then
    update kiln_private.webhook_deliveries set status = 'delivered', attempts = attempts + 1, tries = tries + 1,
      delivered_at = clock_timestamp(), next_attempt_at = null, last_status_code = p_status_code, last_error = null
      where id = p_delivery_id;
    update kiln_private.webhook_endpoints set failing_since = null, last_success_at = now() where id = v_d.endpoint_id;
    return json_build_object('status', 'delivered');
  end if;
  update kiln_private.webhook_endpoints set failing_since = coalesce(failing_since, now())
    where id = v_d.endpoint_id returning failing_since into v_failing;
  if v_gone or v_failing < now() - make_interval(secs => p_disable_after_seconds) then
    update kiln_private.webhook_endpoints set enabled = false, updated_at = now(),
      disabled_reason = case when v_gone then 'The endpoint answered 410 Gone.'
                             else 'No successful delivery for ' || kiln_private.duration_text(p_disable_after_seconds) || ' while failing.' end
      where id = v_d.endpoint_id;
    update kiln_private.webhook_deliveries set status = 'failed', attempts = attempts + 1, tries = tries + 1,
      failed_at = clock_timestamp(), next_attempt_at = null, last_status_code = p_status_code, last_error = p_error
      where id = p_delivery_id;
    return json_build_object('status', 'failed', 'disabled', true);
  end if;
  if v_d.tries + 1 > coalesce(array_length(p_schedule, 1), 0) then
    update kiln_private.webhook_deliveries set status = 'failed', attempts = attempts + 1, tries = tries + 1,
      failed_at = clock_timestamp(), next_attempt_at = null, last_status_code = p_status_code, last_error = p_error
      where id = p_delivery_id;
    return json_build_object('status', 'failed');
  end if;
  -- Retry-After (429/503) is honoured, but never beyond the schedule's longest step.
  v_delay := greatest(p_schedule[v_d.tries + 1], least(coalesce(p_retry_after, 0), (select max(s) from unnest(p_schedule) s)));
  update kiln_private.webhook_deliveries set attempts = attempts + 1, tries = tries + 1,
    next_attempt_at = clock_timestamp() + make_interval(secs => v_delay), last_status_code = p_status_code, last_error = p_error
    where id = p_delivery_id;
  perform graphile_worker.add_jobs(array[kiln_private.webhook_job(v_d.id, v_d.endpoint_id, v_d.round, v_d.tries + 1,
                                                                  clock_timestamp() + make_interval(secs => v_delay))]);
  return json_build_object('status', 'pending', 'delaySeconds', v_delay);
end;
$function$;
comment on function kiln.record_webhook_attempt(uuid,integer,integer,integer,text,text,integer,integer,integer[],integer) is 'Logs an attempt of round p_round, try p_tries and moves the delivery on (an attempt of an earlier round or try is only logged): 2xx delivered; 410 (or failing past p_disable_after_seconds, a reason naming that threshold) disables the endpoint; otherwise the next attempt per p_schedule (seconds; Retry-After honoured within it), or failed when the schedule is used up.';

CREATE OR REPLACE FUNCTION kiln.recover_webhook_deliveries(p_scope_id uuid, p_endpoint_id uuid, p_since timestamp with time zone)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid;
  v_n int := 0;
begin
  if not exists (select 1 from kiln_private.webhook_endpoints e where e.id = p_endpoint_id and e.scope_id = p_scope_id) then
    return null;
  end if;
  for v_id in select d.id from kiln_private.webhook_deliveries d
      where d.endpoint_id = p_endpoint_id and d.status = 'failed' and d.failed_at >= p_since
      order by d.created_at for update loop
    perform kiln_private.queue_delivery(v_id);
    v_n := v_n + 1;
  end loop;
  return v_n;
end;
$function$;
comment on function kiln.recover_webhook_deliveries(uuid,uuid,timestamp with time zone) is 'Sends again every delivery of the endpoint that failed since p_since. How many; null when the endpoint is not the scope''s.';

CREATE OR REPLACE FUNCTION kiln.redeliver_webhook(p_scope_id uuid, p_endpoint_id uuid, p_delivery_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform 1 from kiln_private.webhook_deliveries d join kiln_private.webhook_endpoints e on e.id = d.endpoint_id
    where d.id = p_delivery_id and d.endpoint_id = p_endpoint_id and e.scope_id = p_scope_id
    for update of d;
  if not found then return false; end if;
  perform kiln_private.queue_delivery(p_delivery_id);
  return true;
end;
$function$;
comment on function kiln.redeliver_webhook(uuid,uuid,uuid) is 'Sends a delivery''s message again (same webhook-id and body). False when it is not the scope''s.';

CREATE OR REPLACE FUNCTION kiln.register_worker(p_hostname text, p_pid integer)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_key int;
  v_id text;
begin
  -- Session-level, deliberately: the lock outlives this call and dies with the session.
  loop
    v_key := 1 + floor(random() * 2147483646)::int;
    exit when pg_try_advisory_lock(1263094862, v_key);
  end loop;
  v_id := 'lease-' || v_key;
  insert into kiln_private.worker_heartbeats (worker_id, hostname, pid, lease_key, backend_pid)
    values (v_id, left(p_hostname, 200), p_pid, v_key, pg_backend_pid())
    on conflict (worker_id) do update
      set hostname = excluded.hostname, pid = excluded.pid, backend_pid = excluded.backend_pid, pool_id = null,
          started_at = now(), last_seen = now();
  return v_id;
end;
$function$;
comment on function kiln.register_worker(text,integer) is 'Gives a worker process its lease: takes a session-level advisory lock on the calling connection (which must stay open while the worker runs) and registers it. Returns the worker id that jobs are leased to.';

CREATE OR REPLACE FUNCTION kiln.release_charge(p_charge_id uuid)
 RETURNS kiln_private.charges
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
  if v_charge.key_pool then
    update kiln_private.key_budget_periods
      set held_micros = held_micros - v_charge.reserved_micros
      where key_id = v_charge.key_id and period_start = v_charge.period_start;
  end if;
  update kiln_private.charges
    set status = 'released', finished_at = now()
    where id = p_charge_id
    returning * into v_charge;
  return v_charge;
end;
$function$;
comment on function kiln.release_charge(uuid) is 'Releases a reservation without charging (failed output). Idempotent; a settled charge stays settled.';

CREATE OR REPLACE FUNCTION kiln.release_upstream_trial(p_model_id text)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  update kiln_private.upstream_health set trial_until = null, updated_at = now()
  where model_id = p_model_id and trial_until is not null;
$function$;
comment on function kiln.release_upstream_trial(text) is 'Gives back the trial lease of a catalog entry''s upstream when the trial call ended without telling whether the upstream works (canceled, shut down, an input error): the next claimer gets the trial.';

CREATE OR REPLACE FUNCTION kiln.remove_workspace_member(p_workspace_id uuid, p_account_id uuid)
 RETURNS kiln_private.workspace_members
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;
comment on function kiln.remove_workspace_member(uuid,uuid) is 'Marks a member as left (the row stays); their workspace-bound keys then get 402 on spending calls.';

CREATE OR REPLACE FUNCTION kiln.replace_workflow(p_account_id uuid, p_workspace_id uuid, p_id uuid, p_name text, p_graph jsonb, p_if_versions bigint[])
 RETURNS kiln_private.workflows
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.workflows;
begin
  perform kiln.lock_workflow(p_account_id, p_workspace_id, p_id, p_if_versions);
  update kiln_private.workflows
    set name = coalesce(p_name, name), graph = p_graph, version = version + 1, updated_at = now()
    where id = p_id
    returning * into v_row;
  return v_row;
exception
  when check_violation or not_null_violation then
    raise exception 'invalid workflow: the name must be 1 to 200 characters and the graph an object' using errcode = 'KI001';
end;
$function$;
comment on function kiln.replace_workflow(uuid,uuid,uuid,text,jsonb,bigint[]) is 'Replaces a workflow''s graph (and name; null keeps it): version + 1, updated_at now; emits workflow.saved (trigger). Runs already started keep their snapshot. KN001 / KV001 as kiln.lock_workflow; the graph is validated by the caller.';

CREATE OR REPLACE FUNCTION kiln.require_webhook_rights(p_account_id uuid, p_workspace_id uuid, p_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- A workspace's endpoint is changed (its URL, events, secret) or deleted only by the member who
  -- made it or a current owner or admin, as a workspace's keys are managed. A personal endpoint is
  -- its account's; one of another scope, or none, is left to the change's own 404.
  if p_workspace_id is null then
    return;
  end if;
  perform 1 from kiln_private.webhook_endpoints e
    where e.id = p_id and e.scope_id = p_workspace_id and e.account_id <> p_account_id
      and not exists (select 1 from kiln_private.workspace_members m
                      where m.workspace_id = p_workspace_id and m.account_id = p_account_id and m.left_at is null
                        and m.role in ('owner', 'admin'));
  if found then
    raise exception 'Only the member who made this webhook endpoint, or a workspace owner or admin, may change it, delete it or rotate its secret.'
      using errcode = 'KF002';
  end if;
end;
$function$;
comment on function kiln.require_webhook_rights(uuid,uuid,uuid) is 'PATCH, DELETE and rotate-secret of a workspace''s webhook endpoint: KF002 (403 forbidden) unless the caller made it or is a current owner or admin of the workspace. Nothing for a personal endpoint or an unknown one (the change answers 404).';

CREATE OR REPLACE FUNCTION kiln.reserve_budget(p_account_id uuid, p_workspace_id uuid, p_key_id uuid, p_model_id text, p_origin text, p_amount_micros bigint, p_generation_id uuid DEFAULT NULL::uuid, p_workflow_run_id uuid DEFAULT NULL::uuid, p_node_id text DEFAULT NULL::text)
 RETURNS kiln_private.charges
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_r record;
  v_charge kiln_private.charges;
begin
  select * into v_r from kiln_private.reserve_budgets(array[p_account_id], array[p_workspace_id], array[p_key_id], array[p_model_id],
    array[p_origin], array[p_amount_micros], array[p_generation_id], array[p_workflow_run_id], array[p_node_id]);
  if v_r.error_code is not null then
    raise exception '%', v_r.error_message using errcode = v_r.error_code;
  end if;
  select * into v_charge from kiln_private.charges where id = v_r.charge_id;
  return v_charge;
end;
$function$;
comment on function kiln.reserve_budget(uuid,uuid,uuid,text,text,bigint,uuid,uuid,text) is 'kiln_private.reserve_budgets for one request: reserves the worst-case cost on the personal pool or, for workspace-bound calls, the Team pool. Raises KQ001 (blocked tier or budget exhausted), KP001 (plan not active, or caller left the workspace), KN001, 22023.';

CREATE OR REPLACE FUNCTION kiln.reserve_generation(p_id uuid, p_amount_micros bigint)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
  v_charge kiln_private.charges;
begin
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if not found or v_gen.status <> 'processing' then
    return json_build_object('ok', false);
  end if;
  if v_gen.charge_id is not null then
    -- Idempotent: a retry or takeover keeps the first reservation.
    return json_build_object('ok', true, 'reserved_micros', v_gen.reserved_micros);
  end if;
  -- Raises KQ001 / KP001 when the budget cannot cover the worst case.
  v_charge := kiln.reserve_budget(v_gen.account_id, v_gen.workspace_id, v_gen.key_id, v_gen.model_id, v_gen.origin,
                                  p_amount_micros, v_gen.id, v_gen.run_id, v_gen.output_node_id);
  update kiln_private.generations
    set charge_id = v_charge.id, reserved_micros = v_charge.reserved_micros, updated_at = now()
    where id = p_id;
  return json_build_object('ok', true, 'reserved_micros', v_charge.reserved_micros);
end;
$function$;
comment on function kiln.reserve_generation(uuid,bigint) is 'Reserves the worst-case cost of a processing generation created without a reservation (a run output, priced once its inputs are known) on its budget pool, once (idempotent). Raises KQ001 or KP001 when the budget cannot cover it.';

CREATE OR REPLACE FUNCTION kiln.resolve_identity(p_issuer text, p_subject text, p_email text, p_email_verified boolean, p_auto_link boolean)
 RETURNS TABLE(account_id uuid, workspace_id uuid, linked_now boolean)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.identities;
  v_account uuid;
  v_actor text;
begin
  select * into v_row from kiln_private.identities i where i.issuer = p_issuer and i.subject = p_subject;
  if found then
    -- Touch at most once a minute: a busy agent must not turn every tool call into a row write.
    if v_row.last_seen_at is null or v_row.last_seen_at < now() - interval '1 minute'
       or v_row.email is distinct from coalesce(p_email, v_row.email) then
      update kiln_private.identities i
        set last_seen_at = now(), email = coalesce(p_email, i.email)
        where i.issuer = p_issuer and i.subject = p_subject;
    end if;
    return query select v_row.account_id, v_row.workspace_id, false;
    return;
  end if;
  -- Auto-link only when the service enables it, only on an email the provider says it verified,
  -- and only to the one account with that email; it never picks a workspace (personal budget).
  if not coalesce(p_auto_link, false) or not coalesce(p_email_verified, false) or p_email is null then
    return;
  end if;
  select a.id into v_account from kiln_private.accounts a where lower(a.email) = lower(p_email);
  if not found then
    return;
  end if;
  v_actor := current_setting('kiln.actor', true);
  if nullif(v_actor, '') is null then
    perform set_config('kiln.actor', jsonb_build_object('type', 'identity', 'id', left(p_issuer || ' ' || p_subject, 200))::text, true);
  end if;
  insert into kiln_private.identities as i (issuer, subject, account_id, email, last_seen_at)
    values (p_issuer, p_subject, v_account, p_email, now())
    on conflict (issuer, subject) do nothing;
  perform set_config('kiln.actor', coalesce(v_actor, ''), true);
  -- A concurrent first call may have linked it a moment earlier: answer with whatever is stored.
  return query select i.account_id, i.workspace_id, true
    from kiln_private.identities i where i.issuer = p_issuer and i.subject = p_subject;
end;
$function$;
comment on function kiln.resolve_identity(text,text,text,boolean,boolean) is 'The account (and Team workspace to bill, or null) of an OIDC identity; no row when it is not linked. With p_auto_link, an unlinked identity whose provider-verified email matches an account is linked to it (personal budget), audited as identity.linked with the identity as the actor.';

CREATE OR REPLACE FUNCTION kiln.retire_worker(p_worker_id text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_key int;
begin
  delete from kiln_private.worker_heartbeats where worker_id = p_worker_id returning lease_key into v_key;
  if v_key is not null then
    perform pg_advisory_unlock(1263094862, v_key); -- false (and harmless) on another session
  end if;
end;
$function$;
comment on function kiln.retire_worker(text) is 'Forgets a worker that shut down cleanly (and lets go of its lease on this session).';

CREATE OR REPLACE FUNCTION kiln.retry_workflow_run(p_account_id uuid, p_key_id uuid, p_workspace_id uuid, p_origin text, p_workflow_id uuid, p_run_id uuid, p_window_seconds integer, p_max_attempts integer)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_old kiln_private.workflow_runs;
  v_id uuid := gen_random_uuid();
  v_deadline timestamptz := now() + make_interval(secs => p_window_seconds);
  v_retry uuid;
  v_out record;
  v_settled int;
  v_ready uuid[];
begin
  select * into v_old from kiln_private.workflow_runs
    where id = p_run_id and account_id = p_account_id and workflow_id = p_workflow_id
    for update;
  if not found then
    raise exception 'workflow run not found' using errcode = 'KN001';
  end if;
  -- A retry is a new run: a deleted workflow runs nothing new (its runs stay readable).
  perform 1 from kiln_private.workflows where id = p_workflow_id and deleted_at is null;
  if not found then
    raise exception 'workflow not found' using errcode = 'KN001';
  end if;
  if v_old.status <> 'failed' then
    raise exception 'only a failed run can be retried; this run is %', v_old.status using errcode = 'KT001';
  end if;
  select id into v_retry from kiln_private.workflow_runs where retry_of = p_run_id;
  if found then
    raise exception 'this run was already retried by run %', v_retry using errcode = 'KT001';
  end if;
  perform kiln_private.check_run_budget(p_account_id, p_workspace_id);

  -- Outputs of the failed run still in flight would be run (and charged) twice: cancel them
  -- (released, their calls aborted); the new run runs them again.
  for v_out in
    select o.generation_id from kiln_private.workflow_run_outputs o
      where o.run_id = p_run_id and o.status in ('queued', 'running') and o.generation_id is not null
      order by o.ordinal
  loop
    perform kiln_private.cancel_generation(v_out.generation_id);
  end loop;

  insert into kiln_private.workflow_runs
    (id, workflow_id, account_id, key_id, workspace_id, origin, snapshot, total, deadline, window_seconds, max_attempts, retry_of)
  values
    (v_id, v_old.workflow_id, p_account_id, p_key_id, p_workspace_id, p_origin, v_old.snapshot, v_old.total,
     v_deadline, p_window_seconds, p_max_attempts, p_run_id);

  -- Completed (and skipped) outputs are reused: their results copied, nothing run or charged
  -- again. Every other output gets a new generation and waits for those of its inputs that run.
  with old as (
    select o.*, o.status in ('completed', 'skipped') as keep
    from kiln_private.workflow_run_outputs o where o.run_id = p_run_id
  ), plan as (
    select o.*, case when o.keep then null else kiln_private.uuid_v7() end as gen_id,
           (select count(*)::int from old u where u.output_node_id = any (o.refs) and not u.keep) as deps
    from old o
  ), gens as (
    insert into kiln_private.generations
      (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, max_attempts, run_id, output_node_id)
    select p.gen_id, p_account_id, p_key_id, p_workspace_id, 'workflow', coalesce(p.spec->'model'->>'id', ''),
           case when p.type = 'image' then 'image' else 'code' end, p.spec, 0, p_max_attempts, v_id, p.output_node_id
    from plan p where p.gen_id is not null
    returning id
  )
  insert into kiln_private.workflow_run_outputs
    (run_id, output_node_id, prompt_node_id, account_id, ordinal, type, spec, refs, pending_deps, dependents,
     status, result, cost_micros, finished_at, generation_id)
  select v_id, p.output_node_id, p.prompt_node_id, p_account_id, p.ordinal, p.type, p.spec, p.refs,
         case when p.keep then 0 else p.deps end, p.dependents,
         case when p.keep then p.status when p.deps = 0 then 'queued' else 'waiting' end,
         case when p.keep then p.result end,
         case when p.status = 'completed' then 0 end,
         case when p.keep then clock_timestamp() end,
         (select g.id from gens g where g.id = p.gen_id)
  from plan p;

  select count(*) filter (where status in ('completed', 'skipped')),
         array_agg(generation_id order by ordinal) filter (where status = 'queued')
    into v_settled, v_ready
    from kiln_private.workflow_run_outputs where run_id = v_id;
  perform kiln_private.enqueue_generations(v_ready, p_max_attempts);
  perform kiln_private.schedule_run_deadline(v_id, v_deadline);
  perform kiln_private.note_workflow_progress(v_id, v_settled);
  return v_id;
end;
$function$;
comment on function kiln.retry_workflow_run(uuid,uuid,uuid,text,uuid,uuid,integer,integer) is 'Retries a failed run of the account''s workflow as a new run (retry_of = it) on the same snapshot, billed to the caller: completed and skipped outputs are reused (results copied, cost 0, never run or charged again), outputs of the old run still in flight are canceled, and every other output runs again once the inputs it reads are settled. KN001 unknown run or deleted workflow, KT001 not failed or already retried, KQ001 / KP001 budget.';

CREATE OR REPLACE FUNCTION kiln.revoke_api_key(p_key_id uuid)
 RETURNS kiln_private.api_keys
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;
comment on function kiln.revoke_api_key(uuid) is 'Revokes a key; effective on the very next request. Idempotent.';

CREATE OR REPLACE FUNCTION kiln.revoke_key(p_account_id uuid, p_workspace_id uuid, p_caller_scopes text[], p_key_id uuid)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_key kiln_private.api_keys;
begin
  select * into v_key from kiln_private.visible_key(p_account_id, p_workspace_id, p_key_id);
  if v_key.id is null then
    raise exception 'key not found' using errcode = 'KN001';
  end if;
  perform kiln_private.require_key_rights(p_caller_scopes, v_key.scopes);
  update kiln_private.api_keys set revoked_at = coalesce(revoked_at, now()) where id = v_key.id returning * into v_key;
  delete from kiln_private.api_key_grace where key_id = v_key.id;
  return kiln_private.key_json(v_key, kiln_private.key_used(v_key));
end;
$function$;
comment on function kiln.revoke_key(uuid,uuid,text[],uuid) is 'DELETE /keys/{id}: revokes every secret of the key at once (the next request with any of them gets 401). Idempotent. KN001 not the caller''s scope''s, KF002 a key with a scope the caller (p_caller_scopes) lacks.';

CREATE OR REPLACE FUNCTION kiln.roll_account_spend(p_limit integer DEFAULT 1000)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_n int;
begin
  -- Rows locked in id order and never waited for (a reservation holding one updates it anyway).
  update kiln_private.account_spend s
    set used_micros = 0,
        period_start = kiln_private.period_start(a.period_anchor, now()),
        period_end = kiln_private.period_end(a.period_anchor, kiln_private.period_start(a.period_anchor, now()))
    from kiln_private.accounts a
    where a.id = s.account_id
      and s.account_id in (select x.account_id from kiln_private.account_spend x
                           where x.used_micros > 0 and x.period_end <= now()
                           order by x.account_id limit p_limit for update skip locked);
  get diagnostics v_n = row_count;
  return v_n;
end;
$function$;
comment on function kiln.roll_account_spend(integer) is 'Housekeeping: zeroes up to p_limit kiln_private.account_spend rows whose period ended without a new charge (a partial-index range: free when there are none). Readers already count such rows as 0; this puts them back in index order.';

CREATE OR REPLACE FUNCTION kiln.rotate_key(p_account_id uuid, p_workspace_id uuid, p_caller_scopes text[], p_key_id uuid, p_key_hash bytea, p_display_prefix text, p_grace_seconds integer)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_key kiln_private.api_keys;
begin
  if p_grace_seconds is null or p_grace_seconds < 0 or p_grace_seconds > 604800 then
    raise exception 'graceSeconds must be between 0 and 604800 (7 days)' using errcode = 'KI001';
  end if;
  select * into v_key from kiln_private.visible_key(p_account_id, p_workspace_id, p_key_id);
  if v_key.id is null then
    raise exception 'key not found' using errcode = 'KN001';
  end if;
  select * into v_key from kiln_private.api_keys where id = v_key.id for update;
  -- Before any state is told: a weaker caller learns nothing more than that the key exists.
  perform kiln_private.require_key_rights(p_caller_scopes, v_key.scopes);
  if v_key.revoked_at is not null then
    raise exception 'the key is revoked; create a new key' using errcode = 'KT001';
  end if;
  if v_key.expires_at is not null and v_key.expires_at <= now() then
    raise exception 'the key has expired; create a new key' using errcode = 'KT001';
  end if;
  -- One chain: every older secret ends now; only the one this rotation replaces keeps the grace asked.
  delete from kiln_private.api_key_grace where key_id = v_key.id;
  if p_grace_seconds > 0 then
    insert into kiln_private.api_key_grace (key_hash, key_id, display_prefix, expires_at)
      values (v_key.key_hash, v_key.id, v_key.display_prefix, now() + make_interval(secs => p_grace_seconds));
  end if;
  update kiln_private.api_keys set key_hash = p_key_hash, display_prefix = p_display_prefix, rotated_at = now()
    where id = v_key.id returning * into v_key;
  return kiln_private.key_json(v_key, kiln_private.key_used(v_key));
end;
$function$;
comment on function kiln.rotate_key(uuid,uuid,text[],uuid,bytea,text,integer) is 'POST /keys/{id}/rotate: a new secret under the same id; the secret it replaces stays valid for p_grace_seconds (0 to 7 days), every older one ends at once, then they get the same 401 as any unknown key. KN001 not the caller''s scope''s, KF002 a key with a scope the caller (p_caller_scopes) lacks, KT001 revoked or expired.';

CREATE OR REPLACE FUNCTION kiln.rotate_webhook_secret(p_scope_id uuid, p_id uuid, p_secret_enc bytea, p_overlap_seconds integer)
 RETURNS boolean
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  with u as (
    update kiln_private.webhook_endpoints set
      old_secret_enc = secret_enc, old_secret_until = now() + make_interval(secs => p_overlap_seconds),
      secret_enc = p_secret_enc, updated_at = now()
    where id = p_id and scope_id = p_scope_id returning 1)
  select exists (select 1 from u);
$function$;
comment on function kiln.rotate_webhook_secret(uuid,uuid,bytea,integer) is 'A new signing secret; the previous one keeps signing alongside it for p_overlap_seconds. Whether the endpoint exists.';

CREATE OR REPLACE FUNCTION kiln.sample_telemetry()
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'jobs', (select coalesce(json_agg(j), '[]'::json) from (
      select j.task_identifier as task, count(*)::int as waiting,
             greatest(0, extract(epoch from now() - min(j.run_at)))::float8 as oldest_seconds
        from graphile_worker.jobs j
        where j.locked_at is null and j.run_at <= now() and j.attempts < j.max_attempts
        group by j.task_identifier) j),
    'webhook_backlog', (select count(*)::int from kiln_private.webhook_deliveries d where d.status = 'pending'),
    'workers_alive', (select count(*)::int from kiln_private.worker_heartbeats h
                        where h.lease_key is not null and kiln_private.lease_key_held(h.lease_key)));
$function$;
comment on function kiln.sample_telemetry() is 'The gauges /metrics reports for the whole service: per task, jobs due and not locked and the age of the oldest (graphile_worker.jobs); pending webhook deliveries; workers whose lease is held. Read at most every 5 s per process.';

CREATE OR REPLACE FUNCTION kiln.send_webhook_test(p_scope_id uuid, p_endpoint_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_enabled boolean;
begin
  select e.enabled into v_enabled from kiln_private.webhook_endpoints e where e.id = p_endpoint_id and e.scope_id = p_scope_id;
  if not found then return false; end if;
  if not v_enabled then
    raise exception 'The endpoint is disabled: enable it (PATCH enabled: true) before sending a test event.' using errcode = 'KT001';
  end if;
  perform kiln_private.emit_event(p_scope_id, 'webhook.test', null, json_build_object('endpointId', p_endpoint_id), p_endpoint_id);
  return true;
end;
$function$;
comment on function kiln.send_webhook_test(uuid,uuid) is 'Emits a webhook.test event delivered to this endpoint only. False when it is not the scope''s; KT001 when it is disabled.';

CREATE OR REPLACE FUNCTION kiln.session_info(p_key_hash bytea)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'user', json_build_object('id', a.id, 'email', a.email, 'admin', a.is_admin or a.admin_by_group),
    'workspaceId', k.workspace_id,
    'workspaces', coalesce((select json_agg(json_build_object('id', w.id, 'name', w.name, 'role', m.role) order by w.name, w.id)
                            from kiln_private.workspace_members m join kiln_private.workspaces w on w.id = m.workspace_id
                            where m.account_id = a.id and m.left_at is null), '[]'),
    'expiresAt', to_char(least(k.expires_at, coalesce(k.last_used_at, k.created_at) + make_interval(secs => k.idle_seconds)) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
  from kiln_private.credentials(array[p_key_hash]) c
  join kiln_private.api_keys k on k.id = c.id and k.kind = 'session'
  join kiln_private.accounts a on a.id = k.account_id;
$function$;
comment on function kiln.session_info(bytea) is 'Who a live console session is: the user, the workspace it acts in (null = personal), the workspaces it may switch to, and when it ends. No row when the session is not live.';

CREATE OR REPLACE FUNCTION kiln.set_account_admin(p_account_id uuid, p_admin boolean)
 RETURNS kiln_private.accounts
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.accounts;
begin
  if p_admin is null then
    raise exception 'admin must be true or false' using errcode = 'KI001';
  end if;
  update kiln_private.accounts set is_admin = p_admin where id = p_account_id returning * into v_row;
  if not found then
    raise exception 'account not found' using errcode = 'KN001';
  end if;
  return v_row;
end;
$function$;
comment on function kiln.set_account_admin(uuid,boolean) is 'kiln user set --admin: makes an account an admin (or not); audited as account.updated by the accounts trigger. KN001 for an unknown account.';

CREATE OR REPLACE FUNCTION kiln.set_audit_retention(p_retention interval)
 RETURNS interval
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if p_retention is not null and p_retention <= interval '0' then
    raise exception 'the retention must be positive, or null to keep every entry' using errcode = 'KI001';
  end if;
  insert into kiln_private.audit_policy (only_row, retention, set_at) values (true, p_retention, now())
    on conflict (only_row) do update set retention = excluded.retention, set_at = excluded.set_at
    where kiln_private.audit_policy.retention is distinct from excluded.retention;
  return p_retention;
end;
$function$;
comment on function kiln.set_audit_retention(interval) is 'The owner''s: sets how long the audit log keeps entries (null = forever). `kiln migrate` calls it with KILN_AUDIT_RETENTION. Invoker rights and no grant: only the owner (or a superuser) can run it.';

CREATE OR REPLACE FUNCTION kiln.set_workspace_plan(p_workspace_id uuid, p_status text, p_budget_micros bigint, p_set_budget boolean)
 RETURNS kiln_private.workspaces
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_ws kiln_private.workspaces;
begin
  update kiln_private.workspaces
    set plan_status = p_status,
        plan_budget_micros = case when p_set_budget then p_budget_micros else plan_budget_micros end,
        plan_period_anchor = case when plan_status = 'none' then date_trunc('day', now(), 'UTC') else plan_period_anchor end
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
$function$;
comment on function kiln.set_workspace_plan(uuid,text,bigint,boolean) is 'Sets a workspace''s Team plan status (active or lapsed) and optionally its pooled budget (null = unlimited).';

CREATE OR REPLACE FUNCTION kiln.settle_charge(p_charge_id uuid, p_amount_micros bigint)
 RETURNS kiln_private.charges
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
  if v_charge.key_pool then
    update kiln_private.key_budget_periods
      set held_micros = held_micros - v_charge.reserved_micros,
          settled_micros = settled_micros + v_amount
      where key_id = v_charge.key_id and period_start = v_charge.period_start;
  end if;
  update kiln_private.charges
    set status = 'settled', settled_micros = v_amount, finished_at = now()
    where id = p_charge_id
    returning * into v_charge;
  return v_charge;
end;
$function$;
comment on function kiln.settle_charge(uuid,bigint) is 'Settles a reservation at the actual cost (clamped to the reservation). Idempotent: settling or releasing twice changes nothing.';

CREATE OR REPLACE FUNCTION kiln.sign_in(p_issuer text, p_subject text, p_email text, p_email_verified boolean, p_allowed_domains text[], p_admin_by_group boolean)
 RETURNS TABLE(account_id uuid, outcome text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_column
declare
  v_account uuid;
  v_domain text := lower(split_part(coalesce(p_email, ''), '@', 2));
begin
  -- 1. An identity already linked (kiln identity link, the same links MCP uses).
  select i.account_id into v_account from kiln_private.identities i where i.issuer = p_issuer and i.subject = p_subject;
  if v_account is not null then
    update kiln_private.identities set last_seen_at = now() where issuer = p_issuer and subject = p_subject;
    if p_admin_by_group is not null then
      update kiln_private.accounts set admin_by_group = p_admin_by_group where id = v_account and admin_by_group <> p_admin_by_group;
    end if;
    return query select v_account, 'linked'::text;
    return;
  end if;
  -- 2. A verified email of an allowed domain: a new user on the default tier, linked.
  if coalesce(p_email_verified, false) and v_domain <> '' and v_domain = any (coalesce(p_allowed_domains, '{}'))
     and p_email ~ '^[^@\s]+@[^@\s]+$' and length(p_email) <= 320 then
    select a.id into v_account from kiln_private.accounts a where lower(a.email) = lower(p_email);
    if v_account is not null then
      -- An account with that email exists but is not linked to this identity: an operator links
      -- it (kiln identity link); taking it over by email alone is refused.
      perform kiln_private.audit(null, 'session.refused', 'identity', left(p_issuer || ' ' || p_subject, 400),
        jsonb_build_object('reason', 'email_in_use', 'emailDomain', v_domain));
      return query select null::uuid, 'email_in_use'::text;
      return;
    end if;
    select (kiln.create_account(p_email)).id into v_account;
    insert into kiln_private.identities (issuer, subject, account_id, email) values (p_issuer, p_subject, v_account, p_email);
    if p_admin_by_group then
      update kiln_private.accounts set admin_by_group = true where id = v_account;
    end if;
    return query select v_account, 'provisioned'::text;
    return;
  end if;
  -- 3. Anyone else: refused, nothing created.
  perform kiln_private.audit(null, 'session.refused', 'identity', left(p_issuer || ' ' || p_subject, 400),
    jsonb_build_object('reason', case when v_domain = '' then 'no_email' when not coalesce(p_email_verified, false) then 'email_not_verified'
                                      else 'domain_not_allowed' end, 'emailDomain', nullif(v_domain, '')));
  return query select null::uuid, 'refused'::text;
end;
$function$;
comment on function kiln.sign_in(text,text,text,boolean,text[],boolean) is 'Who an SSO sign-in is: a linked identity''s user (linked); else, for a verified email of an allowed domain, a new user on the default tier, linked (provisioned); else nobody (refused, or email_in_use when an unlinked account has that email), audited as session.refused. p_admin_by_group (null = no admin group configured) refreshes the user''s admin-by-group flag.';

CREATE OR REPLACE FUNCTION kiln.snapshot_workflow(p_account_id uuid, p_workspace_id uuid, p_id uuid)
 RETURNS TABLE(graph jsonb, models json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- FOR SHARE: an edit cannot commit between this read and the run insert of the same transaction.
  select w.graph,
         (select coalesce(json_agg(m), '[]'::json) from kiln.models m where m.enabled)
  from (select * from kiln_private.workflows
        where id = p_id and deleted_at is null and scope_id = any (kiln_private.workflow_scopes(p_account_id, p_workspace_id))
        for share) w;
$function$;
comment on function kiln.snapshot_workflow(uuid,uuid,uuid) is 'The graph of a workflow of the caller''s scope that is not deleted, locked until the end of the transaction, plus the enabled catalog: what a run snapshots.';

CREATE OR REPLACE FUNCTION kiln.start_generation(p_id uuid, p_worker_id text, p_job_id bigint, p_stale_seconds integer, p_wait_ms integer, p_job_max_attempts integer, p_max_crashes integer DEFAULT 10)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
  v_run kiln_private.workflow_runs;
  v_out kiln_private.workflow_run_outputs;
  v_account kiln_private.accounts;
  v_run_id uuid;
  v_slots int;
  v_n int;
  v_crashed boolean := false;
begin
  select run_id into v_run_id from kiln_private.generations where id = p_id;
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  if v_run_id is not null then
    select * into v_run from kiln_private.workflow_runs where id = v_run_id for update;
  end if;
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if v_gen.status in ('completed', 'failed') then
    return json_build_object('outcome', 'done', 'status', v_gen.status);
  end if;
  if v_run_id is not null then
    select * into v_out from kiln_private.workflow_run_outputs
      where run_id = v_run_id and output_node_id = v_gen.output_node_id for update;
    if v_out.status = 'waiting' then
      return json_build_object('outcome', 'not_ready'); -- a stray job: its upstream will enqueue it
    end if;
  end if;
  -- Another job holds this generation's key: this one was superseded (graphile-worker's add_job
  -- clears the key of a locked job and queues a new one, e.g. a slot nudge that met this job
  -- between its pickup and this call). The newer job runs it; this one ends.
  if exists (select 1 from graphile_worker.jobs j where j.key = p_id::text and j.id <> p_job_id) then
    return json_build_object('outcome', 'superseded');
  end if;

  if v_gen.status = 'processing' then
    if v_gen.worker_id = p_worker_id and v_gen.job_id = p_job_id then
      null; -- the same job again (cannot normally happen): carry on
    elsif kiln_private.lease_held(v_gen.worker_id, v_gen.job_id, p_stale_seconds) then
      -- A live worker is running it, however slowly: never run it twice.
      return json_build_object('outcome', 'busy');
    end if;
    -- Otherwise its worker died during the execution (a crash, a kill, a lost session): take it
    -- over; the slot is already held. The cut-off execution is a crash, not an attempt: it never
    -- counts toward max_attempts, but N of them in a row (p_max_crashes) fail the generation, in
    -- case it is what stops its workers.
    v_crashed := v_gen.worker_id is distinct from p_worker_id or v_gen.job_id is distinct from p_job_id;
    if v_crashed and v_gen.crash_streak + 1 >= p_max_crashes then
      update kiln_private.generations
        set crashes = crashes + 1, crash_streak = crash_streak + 1, attempts = greatest(attempts - 1, 0), updated_at = now()
        where id = p_id;
      perform kiln.fail_generation(p_id, format(
        'the worker running this generation stopped during it %s times in a row (it crashed or was killed), so it was not run again: '
        'the request may be what stops the worker. Nothing was charged.', v_gen.crash_streak + 1));
      return json_build_object('outcome', 'done', 'status', 'failed', 'settled', true, 'type', v_gen.type, 'model_id', v_gen.model_id);
    end if;
  else
    if v_run_id is not null then
      if v_run.status in ('completed', 'failed') then
        v_n := kiln_private.abandon_workflow_outputs(v_run_id, array[v_gen.output_node_id]);
        update kiln_private.workflow_runs set abandoned = abandoned + v_n where id = v_run_id;
        perform kiln_private.note_workflow_progress(v_run_id, 0);
        return json_build_object('outcome', 'done', 'status', 'abandoned');
      end if;
      if v_gen.started_at is null and clock_timestamp() > v_run.deadline then
        perform kiln.expire_workflow_run(v_run_id, p_stale_seconds);
        return json_build_object('outcome', 'done', 'status', 'failed');
      end if;
    end if;
    -- pending: take one of the account's parallel slots, or wait for one. Serialised per account.
    perform pg_advisory_xact_lock(hashtextextended('kiln.slots:' || v_gen.account_id::text, 0));
    select * into v_account from kiln_private.accounts where id = v_gen.account_id;
    if v_account.tier = 'blocked' then
      perform kiln.fail_generation(p_id, case when v_run_id is null then 'this account cannot run generations'
                                              else 'insufficient_quota: this account cannot run generations' end);
      return json_build_object('outcome', 'done', 'status', 'failed', 'settled', true, 'type', v_gen.type, 'model_id', v_gen.model_id);
    end if;
    select coalesce(v_account.parallel_slots, t.parallel_slots) into v_slots
      from kiln_private.tiers t where t.tier = v_account.tier;
    if kiln_private.busy_slots(v_gen.account_id) >= v_slots then
      -- Never rejected: wait pending and look again later (or sooner, when a slot frees).
      update kiln_private.generations set waiting = true, updated_at = now() where id = p_id;
      perform graphile_worker.add_job('generation__run', json_build_object('id', p_id),
                                      run_at => now() + make_interval(secs => p_wait_ms / 1000.0),
                                      job_key => p_id::text,
                                      max_attempts => kiln_private.generation_job_attempts());
      return json_build_object('outcome', 'wait');
    end if;
  end if;

  update kiln_private.generations
    set status = 'processing',
        waiting = false,
        -- A takeover replaces the cut-off execution: the attempt it was stays uncounted.
        attempts = attempts + case when v_crashed then 0 else 1 end,
        crashes = crashes + v_crashed::int,
        crash_streak = crash_streak + v_crashed::int,
        worker_id = p_worker_id,
        job_id = p_job_id,
        started_at = coalesce(started_at, now()),
        updated_at = now()
    where id = p_id
    returning * into v_gen;
  if v_run_id is not null then
    update kiln_private.workflow_run_outputs
      set status = 'running', started_at = coalesce(started_at, clock_timestamp()), updated_at = now()
      where run_id = v_run_id and output_node_id = v_gen.output_node_id;
    if v_run.status = 'pending' then
      update kiln_private.workflow_runs set status = 'running', started_at = clock_timestamp(), updated_at = now() where id = v_run_id;
    end if;
  end if;
  return json_build_object(
    'outcome', 'run',
    'attempt', v_gen.attempts,
    'max_attempts', v_gen.max_attempts,
    'crashes', v_gen.crashes,
    'account_id', v_gen.account_id,
    'type', v_gen.type,
    'model_id', v_gen.model_id,
    'request', v_gen.request,
    'reserved', v_gen.charge_id is not null,
    'reserved_micros', v_gen.reserved_micros,
    'run_id', v_run_id,
    'output_node_id', v_gen.output_node_id,
    -- A run output reads the results of the outputs it depends on.
    'upstream', case when v_run_id is not null then (
      select coalesce(json_object_agg(u.output_node_id, u.result), '{}'::json)
      from kiln_private.workflow_run_outputs u
      where u.run_id = v_run_id and u.output_node_id = any (v_out.refs) and u.status = 'completed') end);
end;
$function$;
comment on function kiln.start_generation(uuid,text,bigint,integer,integer,integer,integer) is 'Moves a generation (any origin) to processing for a worker''s job, respecting the account''s parallel slots and, for a run output, its run (outcome run, with the request and, for a run output, its upstream results), or says why not: wait (slots full; re-queued for later), busy (a live worker runs it), superseded (a newer job holds its key and runs it), done (already settled, abandoned, expired, or failed here after p_max_crashes crashes in a row or for a blocked account: then settled true, with its type and model_id, for the caller to count), not_ready (a run output whose inputs are not settled), missing. Taking over from a dead worker counts a crash, not an attempt; p_job_max_attempts is unused (kept for older callers).';

CREATE OR REPLACE FUNCTION kiln.start_generations(p_key_hashes bytea[], p_origin text, p_types text[], p_model_ids text[], p_model_versions bigint[], p_requests jsonb[], p_reserves bigint[], p_max_attempts integer, p_idem_keys text[] DEFAULT NULL::text[], p_fingerprints bytea[] DEFAULT NULL::bytea[], p_idem_ttl_seconds integer DEFAULT 86400)
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, retry_after integer, id uuid, error_code text, error_message text, replayed boolean)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_column
declare
  v_n int := coalesce(cardinality(p_key_hashes), 0);
  a_status text[];
  a_key uuid[];
  a_account uuid[];
  a_workspace uuid[];
  a_retry int[];
  v_idx int[];
begin
  if v_n = 0 then
    return;
  end if;
  if v_n > 50 then
    raise exception 'at most 50 generations per call' using errcode = '22023';
  end if;
  -- 1. Key, write scope and the key's own rpm (generation starts have no endpoint bucket).
  select array_agg(r.status order by r.ord), array_agg(r.key_id order by r.ord), array_agg(r.account_id order by r.ord),
         array_agg(r.workspace_id order by r.ord), array_agg(r.retry_after order by r.ord)
    into a_status, a_key, a_account, a_workspace, a_retry
    from kiln.authorize_requests(p_key_hashes, array_fill('write'::text, array[v_n]), array_fill(null::text, array[v_n]),
                                 array_fill(null::int, array[v_n]), array_fill(false, array[v_n])) r;
  -- 2. The admitted requests, through the generation primitive (a refused key claims nothing).
  select array_agg(s.i order by s.i) into v_idx from generate_subscripts(p_key_hashes, 1) as s(i) where a_status[s.i] = 'ok';
  return query
    with g as (
      select * from kiln_private.insert_generations(
        array(select a_account[i] from unnest(v_idx) as u(i)),
        array(select a_key[i] from unnest(v_idx) as u(i)),
        array(select a_workspace[i] from unnest(v_idx) as u(i)),
        array_fill(p_origin, array[coalesce(cardinality(v_idx), 0)]),
        array(select p_types[i] from unnest(v_idx) as u(i)),
        array(select p_model_ids[i] from unnest(v_idx) as u(i)),
        array(select p_model_versions[i] from unnest(v_idx) as u(i)),
        array(select p_requests[i] from unnest(v_idx) as u(i)),
        array(select p_reserves[i] from unnest(v_idx) as u(i)),
        p_max_attempts,
        case when p_idem_keys is not null then array(select p_idem_keys[i] from unnest(v_idx) as u(i)) end,
        case when p_idem_keys is not null then array(select p_fingerprints[i] from unnest(v_idx) as u(i)) end,
        p_idem_ttl_seconds)
    )
    select s.i::int, a_status[s.i], a_key[s.i], a_account[s.i], a_workspace[s.i], a_retry[s.i], g.id, g.error_code, g.error_message,
           coalesce(g.replayed, false)
    from generate_subscripts(p_key_hashes, 1) as s(i)
    left join g on v_idx[g.ord] = s.i
    order by s.i;
end;
$function$;
comment on function kiln.start_generations(bytea[],text,text[],text[],bigint[],jsonb[],bigint[],integer,text[],bytea[],integer) is 'POST /generations for up to 50 requests in one transaction: authenticates each key (write scope, the key''s own rpm), then starts the admitted ones through kiln_private.insert_generations, with their Idempotency-Keys (null: none) kept p_idem_ttl_seconds. Each row carries its authorization status and either the new id (replayed: the stored id of an earlier request with that key and body) or its own business error (KI001, KQ001, KP001, KS001, KD001, KD002); the others still commit.';

CREATE OR REPLACE FUNCTION kiln.start_workflow_run(p_account_id uuid, p_key_id uuid, p_workspace_id uuid, p_origin text, p_workflow_id uuid, p_snapshot jsonb, p_outputs jsonb, p_window_seconds integer, p_max_attempts integer)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid := gen_random_uuid();
  v_deadline timestamptz := now() + make_interval(secs => p_window_seconds);
  v_skipped int;
  v_ready uuid[];
begin
  -- The workflow's owner is a billing scope (kiln_private.workflow_scopes); a deleted one is not runnable.
  perform 1 from kiln_private.workflows
    where id = p_workflow_id and deleted_at is null and scope_id = any (kiln_private.workflow_scopes(p_account_id, p_workspace_id));
  if not found then
    raise exception 'workflow not found' using errcode = 'KN001';
  end if;
  -- Refuse a run that could not charge a single output (every output reserves as it starts).
  perform kiln_private.check_run_budget(p_account_id, p_workspace_id);

  insert into kiln_private.workflow_runs
    (id, workflow_id, account_id, key_id, workspace_id, origin, snapshot, total, deadline, window_seconds, max_attempts)
  values
    (v_id, p_workflow_id, p_account_id, p_key_id, p_workspace_id, p_origin, p_snapshot,
     jsonb_array_length(p_outputs), v_deadline, p_window_seconds, p_max_attempts);

  with units as (
    select u.*, case when u.type = 'video' then null else kiln_private.uuid_v7() end as gen_id
    from jsonb_to_recordset(p_outputs) as u(output text, prompt text, ordinal int, type text, spec jsonb, refs text[], deps int, dependents text[])
  ), gens as (
    insert into kiln_private.generations
      (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, max_attempts, run_id, output_node_id)
    select u.gen_id, p_account_id, p_key_id, p_workspace_id, 'workflow', coalesce(u.spec->'model'->>'id', ''),
           case when u.type = 'image' then 'image' else 'code' end, u.spec, 0, p_max_attempts, v_id, u.output
    from units u where u.gen_id is not null
    returning id
  )
  insert into kiln_private.workflow_run_outputs
    (run_id, output_node_id, prompt_node_id, account_id, ordinal, type, spec, refs, pending_deps, dependents, status, finished_at, generation_id)
  select v_id, u.output, u.prompt, p_account_id, u.ordinal, u.type, u.spec, u.refs, u.deps, u.dependents,
         case when u.type = 'video' then 'skipped' when u.deps = 0 then 'queued' else 'waiting' end,
         case when u.type = 'video' then clock_timestamp() end,
         (select g.id from gens g where g.id = u.gen_id)
  from units u;

  select count(*) filter (where status = 'skipped'), array_agg(generation_id order by ordinal) filter (where status = 'queued')
    into v_skipped, v_ready
    from kiln_private.workflow_run_outputs where run_id = v_id;

  perform kiln_private.enqueue_generations(v_ready, p_max_attempts);
  perform kiln_private.schedule_run_deadline(v_id, v_deadline);
  -- Skipped (video) outputs settle at once; a run with nothing to execute completes here.
  perform kiln_private.note_workflow_progress(v_id, v_skipped);
  return v_id;
exception
  when check_violation or not_null_violation or invalid_text_representation or unique_violation then
    raise exception 'invalid run plan' using errcode = 'KI001';
end;
$function$;
comment on function kiln.start_workflow_run(uuid,uuid,uuid,text,uuid,jsonb,jsonb,integer,integer) is 'Starts a run in one transaction: checks that the workflow is the caller''s billing scope''s and not deleted, and that the caller can be charged (KN001, KQ001, KP001), stores the snapshot, the outputs with their dependency counts and one generation (origin workflow) per output, and queues the ready ones plus the run-window check.';

CREATE OR REPLACE FUNCTION kiln.sweep_workers(p_stale_seconds integer)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_stale interval := make_interval(secs => p_stale_seconds);
  v_dead text[];
  v_gen record;
  v_failed int := 0;
begin
  v_dead := kiln.unlock_dead_workers(p_stale_seconds);
  if v_dead is null then
    return json_build_object('skipped', true);
  end if;
  v_dead := v_dead || kiln_private.unlock_silent_pools(p_stale_seconds);

  -- Generations no job will ever finish (e.g. a worker died during the final attempt, or the
  -- job was removed): fail them so no reservation dangles. A run output still waiting for its
  -- inputs has no job yet, by design.
  for v_gen in
    select g.id from kiln_private.generations g
      where g.status in ('pending', 'processing')
        and g.updated_at < now() - v_stale
        and (g.worker_id is null or not kiln_private.worker_alive(g.worker_id, p_stale_seconds))
        and not exists (
          select 1 from graphile_worker.jobs j
            where j.key = g.id::text and (j.locked_at is not null or j.attempts < j.max_attempts))
        and not exists (
          select 1 from graphile_worker.jobs j
            where j.id = g.job_id and j.locked_by is not null)
        and not exists (
          select 1 from kiln_private.workflow_run_outputs o
            where o.generation_id = g.id and o.status = 'waiting')
      for update of g skip locked
  loop
    perform kiln.fail_generation(v_gen.id, kiln_private.unfinishable_message(v_gen.id));
    v_failed := v_failed + 1;
  end loop;

  return json_build_object('unlocked', v_dead, 'failed_generations', v_failed);
end;
$function$;
comment on function kiln.sweep_workers(integer) is 'Crash recovery at the heartbeat interval: unlock_dead_workers, unlock_silent_pools, then fails generations that no job can finish any more (read from the graphile_worker.jobs view), so no reservation dangles.';

CREATE OR REPLACE FUNCTION kiln.switch_object(p_path text, p_from_location text, p_data bytea, p_location text, p_sha256 bytea)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_old kiln_private.objects;
begin
  select * into v_old from kiln_private.objects o where o.path = p_path for update;
  -- Gone (retention) or moved by someone else meanwhile: nothing to switch.
  if not found or v_old.location is distinct from p_from_location or (p_location is null) = (v_old.backend = 'postgres') then
    return false;
  end if;
  if p_data is not null and (length(p_data) <> v_old.byte_size or sha256(p_data) <> p_sha256) then
    raise exception 'copied bytes do not match the object' using errcode = 'KI001';
  end if;
  if v_old.sha256 is not null and v_old.sha256 <> p_sha256 then
    raise exception 'copied bytes do not match the object' using errcode = 'KI001';
  end if;
  update kiln_private.objects o
    set backend = case when p_location is null then 'postgres' else 's3' end,
        data = p_data, location = p_location, sha256 = p_sha256
    where o.path = p_path;
  if p_location is not null then
    perform kiln_private.take_object_intent(p_location);
  end if;
  -- The old key is kept for the grace period (a presigned URL may still point at it), then swept.
  if v_old.location is not null then
    insert into kiln_private.object_intents (location) values (v_old.location) on conflict (location) do update set created_at = now();
  end if;
  return true;
end;
$function$;
comment on function kiln.switch_object(text,text,bytea,text,bytea) is 'store migrate: points one object at its verified copy — bytes in p_data (to postgres) or under p_location (to s3) — if it is still where the copy was made from (p_from_location; null = postgres). The given-up key is noted for the sweep. False when the object is gone or already moved. KI001 when the copy''s size or hash differ.';

CREATE OR REPLACE FUNCTION kiln.switch_session_workspace(p_key_hash bytea, p_workspace_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid;
  v_account uuid;
begin
  select c.id, c.account_id into v_id, v_account from kiln_private.credentials(array[p_key_hash]) c
    join kiln_private.api_keys k on k.id = c.id and k.kind = 'session';
  if v_id is null then
    return false;
  end if;
  if p_workspace_id is not null then
    perform 1 from kiln_private.workspace_members where workspace_id = p_workspace_id and account_id = v_account and left_at is null;
    if not found then
      raise exception 'workspace not found' using errcode = 'KN001';
    end if;
  end if;
  update kiln_private.api_keys set workspace_id = p_workspace_id where id = v_id;
  return true;
end;
$function$;
comment on function kiln.switch_session_workspace(bytea,uuid) is 'The console''s switcher: the session acts in one of its user''s workspaces (KN001 when not a current member), or personally (null).';

CREATE OR REPLACE FUNCTION kiln.take_ended_generations()
 RETURNS json
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v text := nullif(current_setting('kiln.ended_generations', true), '');
begin
  if v is null then
    return '[]'::json;
  end if;
  perform set_config('kiln.ended_generations', '', true);
  return ('[' || replace(rtrim(v, E'\n'), E'\n', ',') || ']')::json;
end;
$function$;
comment on function kiln.take_ended_generations() is 'The generations ended (failed or canceled) in this transaction since the last call, each {type, model_id, status failed|canceled}, for the ending process''s kiln_generations_total; forgets them. Called in the same statement as the call that ended them (after it, from a materialized CTE).';

CREATE OR REPLACE FUNCTION kiln.unlink_identity(p_issuer text, p_subject text)
 RETURNS kiln_private.identities
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.identities;
begin
  delete from kiln_private.identities where issuer = p_issuer and subject = p_subject returning * into v_row;
  if not found then
    raise exception 'identity not found' using errcode = 'KN001';
  end if;
  return v_row;
end;
$function$;
comment on function kiln.unlink_identity(text,text) is 'Removes an identity link; the next MCP tool call of that sign-in is refused as unlinked. KN001 when absent.';

CREATE OR REPLACE FUNCTION kiln.unlock_dead_workers(p_stale_seconds integer)
 RETURNS text[]
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_dead text[];
begin
  -- One sweeper at a time; the others skip this round.
  if not pg_try_advisory_xact_lock(hashtextextended('kiln.sweep_workers', 0)) then
    return null;
  end if;
  select coalesce(array_agg(h.pool_id) filter (where h.pool_id is not null), array[]::text[]) into v_dead
    from kiln_private.worker_heartbeats h
    where h.lease_key is not null and not kiln_private.lease_key_held(h.lease_key);
  if cardinality(v_dead) > 0 then
    perform graphile_worker.force_unlock_workers(v_dead);
    -- Wake idle workers now rather than at their next poll.
    perform pg_notify('jobs:insert', json_build_object('r', random(), 'count', cardinality(v_dead))::text);
  end if;
  delete from kiln_private.worker_heartbeats h
    where h.lease_key is not null and not kiln_private.lease_key_held(h.lease_key);
  return v_dead;
end;
$function$;
comment on function kiln.unlock_dead_workers(integer) is 'Crash recovery, run by every worker about once a second: unlocks (force_unlock_workers) the jobs of registered workers whose lease lock is free — their process or connection died — so they run again elsewhere within seconds, and forgets them. Reads only the workers'' rows. Returns the pools unlocked (null when another sweep was running).';

CREATE OR REPLACE FUNCTION kiln.update_account(p_account_id uuid, p_tier text, p_budget_micros bigint, p_set_budget boolean)
 RETURNS kiln_private.accounts
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.accounts;
begin
  update kiln_private.accounts
    set tier = coalesce(p_tier, tier),
        budget_micros = case when p_set_budget then p_budget_micros else budget_micros end
    where id = p_account_id
    returning * into v_row;
  if not found then
    raise exception 'account not found' using errcode = 'KN001';
  end if;
  return v_row;
exception
  when check_violation or foreign_key_violation then
    raise exception 'invalid tier or budget' using errcode = 'KI001';
end;
$function$;
comment on function kiln.update_account(uuid,text,bigint,boolean) is 'Sets an account''s tier (null = unchanged) and, when p_set_budget, its personal budget per period (null = unlimited). KN001 for an unknown account, KI001 for a bad tier or budget.';

CREATE OR REPLACE FUNCTION kiln.update_webhook_endpoint(p_scope_id uuid, p_id uuid, p_patch jsonb)
 RETURNS json
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  update kiln_private.webhook_endpoints e set
    url = case when p_patch ? 'url' then p_patch->>'url' else e.url end,
    events = case when not p_patch ? 'events' then e.events
                  when jsonb_typeof(p_patch->'events') = 'null' then null
                  else array(select jsonb_array_elements_text(p_patch->'events')) end,
    description = case when p_patch ? 'description' then p_patch->>'description' else e.description end,
    enabled = case when p_patch ? 'enabled' then (p_patch->>'enabled')::boolean else e.enabled end,
    -- Enabling again clears the reason and the failing streak.
    disabled_reason = case when (p_patch->>'enabled')::boolean then null else e.disabled_reason end,
    failing_since = case when (p_patch->>'enabled')::boolean then null else e.failing_since end,
    updated_at = now()
  where e.id = p_id and e.scope_id = p_scope_id
  returning kiln_private.webhook_endpoint_json(e);
$function$;
comment on function kiln.update_webhook_endpoint(uuid,uuid,jsonb) is 'Applies a PATCH (url, events — null = all —, description, enabled) to an endpoint of the scope; null when absent.';

CREATE OR REPLACE FUNCTION kiln.upsert_model(p_model jsonb)
 RETURNS kiln_private.models
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_model kiln_private.models;
begin
  insert into kiln_private.models as m
    (id, name, description, category, provider, upstream, supports_image_input, input_modalities,
     output_modalities, cost, max_output_tokens, markup, enabled, sort_order, fallbacks)
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
    coalesce((p_model->>'sort_order')::int, 100),
    coalesce(array(select jsonb_array_elements_text(p_model->'fallbacks')), '{}'))
  on conflict (id) do update set
    name = excluded.name, description = excluded.description, category = excluded.category,
    provider = excluded.provider, upstream = excluded.upstream,
    supports_image_input = excluded.supports_image_input, input_modalities = excluded.input_modalities,
    output_modalities = excluded.output_modalities, cost = excluded.cost,
    max_output_tokens = excluded.max_output_tokens, markup = excluded.markup,
    enabled = excluded.enabled, sort_order = excluded.sort_order, fallbacks = excluded.fallbacks,
    updated_at = now()
  returning * into v_model;
  return v_model;
exception
  when check_violation or not_null_violation or invalid_text_representation then
    raise exception 'invalid model entry: %', sqlerrm using errcode = 'KI001';
end;
$function$;
comment on function kiln.upsert_model(jsonb) is 'Inserts or replaces one catalog entry (validated again in the CLI).';

CREATE OR REPLACE FUNCTION kiln.upsert_seed_object(p_path text, p_data bytea, p_content_type text, p_format text, p_width integer, p_height integer)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  insert into kiln_private.objects (path, owner_id, data, content_type, format, width, height, byte_size, visibility)
  values (p_path, null, p_data, p_content_type, p_format, p_width, p_height, length(p_data), 'public')
  on conflict (path) do update set
    data = excluded.data, content_type = excluded.content_type, format = excluded.format,
    width = excluded.width, height = excluded.height, byte_size = excluded.byte_size
  where objects.data is distinct from excluded.data;
$function$;
comment on function kiln.upsert_seed_object(text,bytea,text,text,integer,integer) is 'Stores or refreshes a shared image under seed/ (ownerless, public). Used by migrations only.';

CREATE OR REPLACE FUNCTION kiln.watch_workflow_run(p_account_id uuid, p_workflow_id uuid, p_run_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select (kiln.get_workflow_run(r.account_id, r.workflow_id, r.id)::jsonb
          || jsonb_build_object('open', r.settled + r.abandoned < r.total))::json
  from kiln_private.workflow_runs r
  where r.id = p_run_id and r.account_id = p_account_id and r.workflow_id = p_workflow_id;
$function$;
comment on function kiln.watch_workflow_run(uuid,uuid,uuid) is 'kiln.get_workflow_run plus `open`: whether any output of the run can still settle (settled + abandoned < total). Null when the run is not that account''s run of that workflow.';

CREATE OR REPLACE FUNCTION kiln_private.abandon_workflow_outputs(p_run_id uuid, p_outputs text[])
 RETURNS integer
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
declare
  v_out record;
  v_n int := 0;
begin
  -- Not started (or between retries): never run, and nothing is charged. Their generations end
  -- failed (a job that still picks one up finds it done).
  for v_out in
    select o.output_node_id, o.generation_id from kiln_private.workflow_run_outputs o
      where o.run_id = p_run_id and o.status in ('waiting', 'queued')
        and (p_outputs is null or o.output_node_id = any (p_outputs))
      order by o.ordinal
      for update
  loop
    perform kiln_private.end_generation(v_out.generation_id, 'abandoned: the run ended before this output started; nothing was charged');
    update kiln_private.workflow_run_outputs
      set status = 'abandoned', finished_at = clock_timestamp(), updated_at = now()
      where run_id = p_run_id and output_node_id = v_out.output_node_id;
    v_n := v_n + 1;
  end loop;
  return v_n;
end;
$function$;
comment on function kiln_private.abandon_workflow_outputs(uuid,text[]) is 'Marks not-started outputs of a run (all, or the given ones) abandoned, failing their generations and releasing any reservation. Returns how many.';

CREATE OR REPLACE FUNCTION kiln_private.admin_account_json(a kiln_private.accounts, p_used bigint)
 RETURNS json
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'id', a.id, 'email', a.email, 'tier', a.tier, 'budgetMicros', a.budget_micros, 'usedMicros', coalesce(p_used, 0),
    'keyCount', (select count(*) from kiln_private.api_keys k
                 where k.account_id = a.id and k.kind = 'key' and k.revoked_at is null
                   and (k.expires_at is null or k.expires_at > now())),
    'admin', a.is_admin or a.admin_by_group);
$function$;
comment on function kiln_private.admin_account_json(kiln_private.accounts,bigint) is 'An account as the admin accounts page lists it: its live keys counted through api_keys_account_idx.';

CREATE OR REPLACE FUNCTION kiln_private.admin_workspace_json(w kiln_private.workspaces)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select jsonb_build_object(
    'id', w.id, 'name', w.name, 'ownerId', w.owner_id,
    'ownerEmail', (select a.email from kiln_private.accounts a where a.id = w.owner_id),
    'planStatus', w.plan_status, 'budgetMicros', w.plan_budget_micros,
    'usedMicros', coalesce((select b.held_micros + b.settled_micros from kiln_private.budget_periods b
                            where b.pool_id = w.id and b.period_start = kiln_private.period_start(w.plan_period_anchor, now())), 0),
    'memberCount', (select count(*) from kiln_private.workspace_members m where m.workspace_id = w.id and m.left_at is null),
    'createdAt', to_char(w.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'));
$function$;
comment on function kiln_private.admin_workspace_json(kiln_private.workspaces) is 'A workspace as the admin pages list it: owner, Team plan, spend this period, current members counted.';

CREATE OR REPLACE FUNCTION kiln_private.audit(p_scope_id uuid, p_action text, p_target_type text, p_target_id text, p_details jsonb DEFAULT '{}'::jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  -- The request that makes the change names itself in a transaction-local setting (set_config
  -- ..., true: safe behind a transaction pooler); without one, the change is an operator's.
  v_actor jsonb := nullif(current_setting('kiln.actor', true), '')::jsonb;
begin
  insert into kiln_private.audit_log (scope_id, actor_type, actor_id, action, target_type, target_id, ip, request_id, details)
  values (p_scope_id, coalesce(v_actor->>'type', 'operator'),
          coalesce(v_actor->>'id', session_user::text),
          p_action, p_target_type, p_target_id,
          case when v_actor->>'ip' ~ '^[0-9a-fA-F:.]{2,45}$' then (v_actor->>'ip')::inet end,
          left(v_actor->>'requestId', 200), coalesce(p_details, '{}'));
exception
  when invalid_text_representation then
    insert into kiln_private.audit_log (scope_id, actor_type, actor_id, action, target_type, target_id, details)
    values (p_scope_id, coalesce(v_actor->>'type', 'operator'), coalesce(v_actor->>'id', session_user::text),
            p_action, p_target_type, p_target_id, coalesce(p_details, '{}'));
end;
$function$;
comment on function kiln_private.audit(uuid,text,text,text,jsonb) is 'Appends one audit entry; the actor, IP and request id come from the transaction-local setting kiln.actor (JSON: type, id, ip, requestId) and default to the operator (the database user).';

CREATE OR REPLACE FUNCTION kiln_private.audit_json(p kiln_private.audit_log)
 RETURNS json
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'id', p.id, 'at', to_char(p.at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'actor', json_build_object('type', p.actor_type, 'id', p.actor_id),
    'action', p.action,
    'target', json_build_object('type', p.target_type, 'id', p.target_id),
    'ip', host(p.ip), 'requestId', p.request_id, 'details', p.details);
$function$;
comment on function kiln_private.audit_json(kiln_private.audit_log) is 'An audit entry as the API renders it.';

CREATE OR REPLACE FUNCTION kiln_private.authorize_batch_locked(p_key_hashes bytea[], p_scopes text[], p_buckets text[], p_bucket_rpms integer[], p_with_usage boolean[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, usage text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET lock_timeout TO '2s'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
declare
  v_stale uuid[];
  v_n int := coalesce(cardinality(p_key_hashes), 0);
  v_now timestamptz := clock_timestamp();
  v_keys record;
  -- per request (index = ord)
  v_key_ids uuid[] := array_fill(null::uuid, array[v_n]);
  v_accounts uuid[] := array_fill(null::uuid, array[v_n]);
  v_workspaces uuid[] := array_fill(null::uuid, array[v_n]);
  v_tiers text[] := array_fill(null::text, array[v_n]);
  v_scopes text[][];
  v_scope_ok boolean[] := array_fill(false, array[v_n]);
  v_rpms int[] := array_fill(null::int, array[v_n]);
  -- buckets of the batch, sorted, with their TAT
  v_bkeys text[];
  v_btats timestamptz[];
  v_dirty boolean[];
  v_req_bkeys text[];
  v_req_limits int[];
  v_pos int[];
  v_new timestamptz[];
  v_retry numeric;
  v_i int;
  v_j int;
  v_interval interval;
  v_scope_lists text[] := array_fill(null::text, array[v_n]);
  v_f_hash bytea[];
  v_f_id uuid[];
  v_f_account uuid[];
  v_f_workspace uuid[];
  v_f_scopes text[];
  v_f_rpm int[];
  v_f_tier text[];
  v_usage_ords int[] := array[]::int[];
  v_fast boolean := false;
  v_blimits int[];
  v_admitted text[];
  v_bkey text;
begin
  if v_n = 0 then
    return;
  end if;
  -- All keys of the batch in one index scan (= any keeps the plan on the unique index).
  select array_agg(k.key_hash), array_agg(k.id), array_agg(k.account_id), array_agg(k.workspace_id),
         array_agg(array_to_string(k.scopes, ',')), array_agg(k.rpm), array_agg(k.tier),
         array_agg(k.id) filter (where k.last_used_at is null or k.last_used_at < v_now - interval '1 minute')
    into v_f_hash, v_f_id, v_f_account, v_f_workspace, v_f_scopes, v_f_rpm, v_f_tier, v_stale
    from kiln_private.credentials(p_key_hashes) k;
  -- Last use, to the minute: at most one write per key a minute, never a wait (skip locked).
  -- Only keys whose stored last use is over a minute old (read with the credentials): most
  -- batches write nothing and run no statement for it.
  if v_stale is not null then
    perform kiln_private.touch_keys(v_stale, v_now);
  end if;

  for v_i in 1 .. v_n loop
    v_j := array_position(v_f_hash, p_key_hashes[v_i]);
    if v_j is not null then
      v_key_ids[v_i] := v_f_id[v_j];
      v_accounts[v_i] := v_f_account[v_j];
      v_workspaces[v_i] := v_f_workspace[v_j];
      v_tiers[v_i] := v_f_tier[v_j];
      v_scope_lists[v_i] := v_f_scopes[v_j];
      v_rpms[v_i] := v_f_rpm[v_j];
      v_scope_ok[v_i] := p_scopes[v_i] = any (string_to_array(v_f_scopes[v_j], ','))
        or (p_scopes[v_i] = 'read' and 'write' = any (string_to_array(v_f_scopes[v_j], ',')));
    end if;
  end loop;

  -- Fast path (the common case): each request needs at most one bucket and no bucket is
  -- shared within the batch, so every admission is independent and one INSERT … ON CONFLICT
  -- DO UPDATE … WHERE creates, decides and debits them all, taking row locks in key order.
  v_fast := true;
  v_bkeys := array[]::text[];
  v_blimits := array[]::int[];
  for v_i in 1 .. v_n loop
    continue when v_key_ids[v_i] is null or not v_scope_ok[v_i] or p_buckets[v_i] is null and v_rpms[v_i] is null;
    if v_rpms[v_i] is not null and p_buckets[v_i] is not null then
      v_fast := false;
      exit;
    end if;
    v_bkey := case when v_rpms[v_i] is not null then 'key:' || v_key_ids[v_i]
                   when p_buckets[v_i] = 'read' then 'read:' || v_key_ids[v_i]
                   when p_buckets[v_i] = 'transform' then 'transform:' || v_accounts[v_i] end;
    if v_bkey is null then
      raise exception 'unknown bucket %', p_buckets[v_i] using errcode = '22023';
    end if;
    if v_bkey = any (v_bkeys) then
      v_fast := false;
      exit;
    end if;
    v_bkeys := v_bkeys || v_bkey;
    v_blimits := v_blimits || coalesce(v_rpms[v_i], p_bucket_rpms[v_i]);
  end loop;

  if v_fast then
    if cardinality(v_bkeys) > 0 then
      with admitted as (
        insert into kiln_private.rate_limit_buckets as b (key, tat)
          select u.key, v_now + make_interval(secs => 60.0 / u.lim)
          from unnest(v_bkeys, v_blimits) as u(key, lim)
          order by u.key
        on conflict (key) do update
          -- excluded.tat - v_now is this bucket's emission interval T = 60 s / N.
          set tat = greatest(b.tat, v_now) + (excluded.tat - v_now)
          where greatest(b.tat, v_now) + (excluded.tat - v_now) - v_now <= interval '60 seconds'
        returning b.key)
      select array_agg(key) into v_admitted from admitted;
      v_admitted := coalesce(v_admitted, array[]::text[]);
      -- v_dirty marks admitted buckets; denied ones kept their TAT: read it for retry-after.
      v_dirty := array(select k = any (v_admitted) from unnest(v_bkeys) k);
      v_btats := array_fill(null::timestamptz, array[cardinality(v_bkeys)]);
      if cardinality(v_admitted) < cardinality(v_bkeys) then
        select array_agg(t.tat order by k.o) into v_btats
          from unnest(v_bkeys) with ordinality as k(key, o)
          left join kiln_private.rate_limit_buckets t on t.key = k.key;
      end if;
    end if;
  else
    -- General path: every bucket of the batch, sorted; created when missing, then locked in
    -- key order (so batches never deadlock), decided in memory, and written once at the end.
    select array_agg(distinct b order by b) into v_bkeys
    from (
      select unnest(
        case when v_rpms[i] is not null then array['key:' || v_key_ids[i]] else array[]::text[] end ||
        case p_buckets[i] when 'read' then array['read:' || v_key_ids[i]]
                         when 'transform' then array['transform:' || v_accounts[i]]
                         else array[]::text[] end) as b
      from generate_subscripts(p_key_hashes, 1) as i
      where v_key_ids[i] is not null and v_scope_ok[i]
    ) x;
    insert into kiln_private.rate_limit_buckets (key, tat)
      select b, '-infinity' from unnest(v_bkeys) b
      where not exists (select 1 from kiln_private.rate_limit_buckets x where x.key = b)
      on conflict (key) do nothing;
    select array_agg(l.tat order by l.key) into v_btats
      from (select key, tat from kiln_private.rate_limit_buckets
            where key = any (v_bkeys) order by key for update) l;
    v_dirty := array_fill(false, array[cardinality(v_bkeys)]);
  end if;

  for v_i in 1 .. v_n loop
    ord := v_i;
    key_id := v_key_ids[v_i];
    account_id := v_accounts[v_i];
    workspace_id := v_workspaces[v_i];
    tier := v_tiers[v_i];
    scopes := string_to_array(v_scope_lists[v_i], ',');
    retry_after := null;
    usage := null;
    if v_key_ids[v_i] is null then
      status := 'unauthorized';
      key_id := null; account_id := null; workspace_id := null; tier := null; scopes := null;
      return next;
      continue;
    end if;
    if not v_scope_ok[v_i] then
      status := 'insufficient_scope';
      return next;
      continue;
    end if;
    v_req_bkeys := case when v_rpms[v_i] is not null then array['key:' || v_key_ids[v_i]] else array[]::text[] end;
    v_req_limits := case when v_rpms[v_i] is not null then array[v_rpms[v_i]] else array[]::int[] end;
    if p_buckets[v_i] = 'read' then
      v_req_bkeys := v_req_bkeys || ('read:' || v_key_ids[v_i]);
      v_req_limits := v_req_limits || p_bucket_rpms[v_i];
    elsif p_buckets[v_i] = 'transform' then
      v_req_bkeys := v_req_bkeys || ('transform:' || v_accounts[v_i]);
      v_req_limits := v_req_limits || p_bucket_rpms[v_i];
    elsif p_buckets[v_i] is not null then
      raise exception 'unknown bucket %', p_buckets[v_i] using errcode = '22023';
    end if;
    if v_fast and cardinality(v_req_bkeys) = 1 then
      v_j := array_position(v_bkeys, v_req_bkeys[1]);
      if not v_dirty[v_j] then
        status := 'rate_limited';
        retry_after := greatest(1, ceil(extract(epoch from (
          greatest(v_btats[v_j], v_now) + make_interval(secs => 60.0 / v_req_limits[1]) - v_now - interval '60 seconds')))::int);
        return next;
        continue;
      end if;
      v_req_bkeys := array[]::text[];  -- already debited
    end if;
    -- GCRA: emission interval T = 60 s / N, burst N (tolerance 60 s); all buckets or none.
    v_retry := 0;
    v_pos := array[]::int[];
    v_new := array[]::timestamptz[];
    for v_j in 1 .. coalesce(cardinality(v_req_bkeys), 0) loop
      v_pos := v_pos || array_position(v_bkeys, v_req_bkeys[v_j]);
      v_interval := make_interval(secs => 60.0 / v_req_limits[v_j]);
      v_new := v_new || (greatest(v_btats[v_pos[v_j]], v_now) + v_interval);
      if v_new[v_j] - v_now > interval '60 seconds' then
        v_retry := greatest(v_retry, extract(epoch from (v_new[v_j] - v_now - interval '60 seconds')));
      end if;
    end loop;
    if v_retry > 0 then
      status := 'rate_limited';
      -- Rounded up: waiting this long always finds room again.
      retry_after := greatest(1, ceil(v_retry)::int);
      return next;
      continue;
    end if;
    for v_j in 1 .. coalesce(cardinality(v_pos), 0) loop
      v_btats[v_pos[v_j]] := v_new[v_j];
      v_dirty[v_pos[v_j]] := true;
    end loop;
    status := 'ok';
    retry_after := 0;
    if p_with_usage[v_i] then
      -- Filled in below, for all such requests in one query.
      v_usage_ords := v_usage_ords || v_i;
      continue;
    end if;
    return next;
  end loop;

  if cardinality(v_usage_ords) > 0 then
    return query
      select o.i::int, 'ok'::text, v_key_ids[o.i], v_accounts[o.i], v_workspaces[o.i], v_tiers[o.i],
             string_to_array(v_scope_lists[o.i], ','), 0, u.usage::text
      from unnest(v_usage_ords) as o(i)
      left join lateral kiln_private.usage_rows(v_accounts[o.i], v_workspaces[o.i], v_key_ids[o.i]) u on true;
  end if;

  if not v_fast and v_bkeys is not null and true = any (v_dirty) then
    update kiln_private.rate_limit_buckets b
      set tat = v_btats[array_position(v_bkeys, b.key)]
      where b.key = any (v_bkeys) and v_dirty[array_position(v_bkeys, b.key)];
  end if;
end;
$function$;
comment on function kiln_private.authorize_batch_locked(bytea[],text[],text[],integer[],boolean[]) is 'The general path of kiln.authorize_requests: every bucket of the batch locked in key order, admissions decided in arrival order in memory, each touched bucket written once.';

CREATE OR REPLACE FUNCTION kiln_private.authorize_controls(p_key_hashes bytea[], p_read_rpm integer)
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer)
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select * from kiln_private.authorize_keys(p_key_hashes, 'write', p_read_rpm);
$function$;
comment on function kiln_private.authorize_controls(bytea[],integer) is 'kiln.authorize_requests for a batch of job controls (cancel): write scope, the per-key read bucket at p_read_rpm (a cancel costs what a poll costs) and each key''s own rpm.';

CREATE OR REPLACE FUNCTION kiln_private.authorize_keys(p_key_hashes bytea[], p_scope text, p_read_rpm integer)
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer)
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select r.ord, r.status, r.key_id, r.account_id, r.workspace_id, r.tier, r.scopes, r.retry_after
  from kiln.authorize_requests(
         p_key_hashes,
         array_fill(p_scope, array[cardinality(p_key_hashes)]),
         array_fill('read'::text, array[cardinality(p_key_hashes)]),
         array_fill(p_read_rpm, array[cardinality(p_key_hashes)]),
         array_fill(false, array[cardinality(p_key_hashes)])) r;
$function$;
comment on function kiln_private.authorize_keys(bytea[],text,integer) is 'kiln.authorize_requests for a batch of keys that all need p_scope and draw on the per-key read bucket at p_read_rpm (and each key''s own rpm).';

CREATE OR REPLACE FUNCTION kiln_private.authorize_reads(p_key_hashes bytea[], p_read_rpm integer)
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer)
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select * from kiln_private.authorize_keys(p_key_hashes, 'read', p_read_rpm);
$function$;
comment on function kiln_private.authorize_reads(bytea[],integer) is 'kiln.authorize_requests for a batch of reads: read scope, the per-key read bucket at p_read_rpm and each key''s own rpm.';

CREATE OR REPLACE FUNCTION kiln_private.busy_slots(p_account_id uuid)
 RETURNS integer
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select count(*)::int from kiln_private.generations where account_id = p_account_id and status = 'processing';
$function$;
comment on function kiln_private.busy_slots(uuid) is 'Parallel slots an account uses now: its processing generations (API, MCP and workflow alike).';

CREATE OR REPLACE FUNCTION kiln_private.cancel_generation(p_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_status text;
begin
  select status into v_status from kiln_private.generations where id = p_id;
  if not found or v_status in ('completed', 'failed') then
    return false;
  end if;
  -- Fails it with the error 'canceled' and releases its reservation (a run output also records
  -- the failure on its run); a completion that comes later finds it terminal and applies nothing.
  if not (kiln.fail_generation(p_id, 'canceled')->>'applied')::boolean then
    return false;
  end if;
  -- A queued job is dropped; a locked one keeps running but will not be retried.
  perform graphile_worker.remove_job(p_id::text);
  if v_status = 'processing' then
    -- Whichever worker runs it aborts its provider call (delivered at commit).
    perform pg_notify('kiln:cancel', p_id::text);
  end if;
  return true;
end;
$function$;
comment on function kiln_private.cancel_generation(uuid) is 'Cancels a pending or processing generation: fails it with error ''canceled'' and releases its reservation (kiln.fail_generation), drops its queued job and, when it was processing, notifies channel kiln:cancel with its id so its worker aborts the provider call. False when it had already ended. Callers lock its run first, when it has one.';

CREATE OR REPLACE FUNCTION kiln_private.check_run_budget(p_account_id uuid, p_workspace_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_usage json := kiln.get_usage(p_account_id, p_workspace_id);
begin
  -- The rule kiln.start_workflow_run applies: refuse a run that could not charge a single output.
  if v_usage->>'tier' = 'blocked' then
    raise exception 'this account cannot start generations' using errcode = 'KQ001';
  end if;
  if p_workspace_id is not null then
    if v_usage->>'workspace_used_micros' is null then
      raise exception 'the workspace''s Team plan is not active, or the key''s owner left the workspace' using errcode = 'KP001';
    end if;
    if (v_usage->>'workspace_remaining_micros')::bigint <= 0 then
      raise exception 'the budget for this period is exhausted' using errcode = 'KQ001';
    end if;
  elsif (v_usage->>'remaining_micros')::bigint <= 0 then
    raise exception 'the budget for this period is exhausted' using errcode = 'KQ001';
  end if;
end;
$function$;
comment on function kiln_private.check_run_budget(uuid,uuid) is 'Raises KQ001 / KP001 when a run started by this caller could not charge a single output (blocked tier, exhausted budget, Team plan not active or owner left).';

CREATE OR REPLACE FUNCTION kiln_private.check_workflow_version(p_version bigint, p_if_versions bigint[])
 RETURNS void
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if p_if_versions is not null and not (p_version = any (p_if_versions)) then
    raise exception 'the workflow has changed since that version: it is now version %; read it again and reapply your change, or save without If-Match to overwrite it', p_version
      using errcode = 'KV001';
  end if;
end;
$function$;
comment on function kiln_private.check_workflow_version(bigint,bigint[]) is 'If-Match: KV001 unless the workflow''s version is one of p_if_versions (null = no condition, e.g. "*" or no header).';

CREATE OR REPLACE FUNCTION kiln_private.claim_idempotency_keys(p_account_ids uuid[], p_operations text[], p_keys text[], p_fingerprints bytea[], p_statuses integer[], p_bodies jsonb[], p_ttl_seconds integer)
 RETURNS TABLE(ord integer, outcome text, leader integer, response_status integer, response_body jsonb)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_column
declare
  v_claimed int[];
begin
  -- 1. The first request of each (account, operation, key) of the set claims it: a new row, or an
  --    expired one taken over (the lazy purge). Rows go in key order, so two sets claiming the same
  --    keys cannot deadlock. A key claimed by a transaction still in flight makes this insert wait
  --    for it: committed, its row is the answer (locked here until this transaction ends, so it
  --    cannot expire under us); rolled back (refused), the key is free and claimed here.
  with req as (
    select s.i, p_account_ids[s.i] as a, p_operations[s.i] as op, p_keys[s.i] as k,
           row_number() over (partition by p_account_ids[s.i], p_operations[s.i], p_keys[s.i] order by s.i) as n
    from generate_subscripts(p_keys, 1) as s(i)
    where p_keys[s.i] is not null and p_account_ids[s.i] is not null
  ), ins as (
    insert into kiln_private.idempotency_keys as t
      (account_id, operation, key, fingerprint, response_status, response_body, expires_at)
    select r.a, r.op, r.k, p_fingerprints[r.i], p_statuses[r.i], p_bodies[r.i], now() + make_interval(secs => p_ttl_seconds)
    from req r where r.n = 1
    order by r.a, r.op, r.k
    on conflict (account_id, operation, key) do update
      set fingerprint = excluded.fingerprint, response_status = excluded.response_status,
          response_body = excluded.response_body, created_at = excluded.created_at, expires_at = excluded.expires_at
      where t.expires_at <= now()
    returning t.account_id, t.operation, t.key
  )
  select array_agg(r.i) into v_claimed
    from req r join ins on ins.account_id = r.a and ins.operation = r.op and ins.key = r.k
    where r.n = 1;

  -- 2. Everyone's outcome. A new statement: it sees what the transactions waited for committed.
  --    claimed: this request goes ahead; follower: same body as its leader of this set, which
  --    went ahead; replay: the stored answer, same body; conflict: another body; pending: no
  --    stored answer to give (never committed so; answered as retryable). The stored row is a
  --    correlated subquery, one primary-key probe per unclaimed request: a join could be planned
  --    (and cached, generic) as a scan of the whole table.
  return query
    with req as (
      select s.i, p_account_ids[s.i] as a, p_operations[s.i] as op, p_keys[s.i] as k, p_fingerprints[s.i] as fp,
             min(s.i) over (partition by p_account_ids[s.i], p_operations[s.i], p_keys[s.i]) as lead
      from generate_subscripts(p_keys, 1) as s(i)
      where p_keys[s.i] is not null and p_account_ids[s.i] is not null
    ), outcome as (
      select r.*, r.lead = any (coalesce(v_claimed, '{}')) as claimed,
             case when not (r.lead = any (coalesce(v_claimed, '{}'))) then (
               select t from kiln_private.idempotency_keys t where t.account_id = r.a and t.operation = r.op and t.key = r.k) end as t
      from req r
    )
    select s.i::int,
           case
             when o.i is null then null
             when o.claimed then
               case when o.i = o.lead then 'claimed' when o.fp = p_fingerprints[o.lead] then 'follower' else 'conflict' end
             when (o.t).account_id is null then 'pending'
             when (o.t).fingerprint <> o.fp then 'conflict'
             when (o.t).response_body is null then 'pending'
             else 'replay'
           end,
           o.lead::int,
           case when (o.t).fingerprint = o.fp then (o.t).response_status::int end,
           case when (o.t).fingerprint = o.fp then (o.t).response_body end
    from generate_subscripts(p_keys, 1) as s(i)
    left join outcome o on o.i = s.i
    order by s.i;
end;
$function$;
comment on function kiln_private.claim_idempotency_keys(uuid[],text[],text[],bytea[],integer[],jsonb[],integer) is 'Claims the Idempotency-Keys of a set of requests (null key = none) in the caller''s transaction, storing each claimant''s fingerprint and the answer it will get if accepted (status, body; the caller deletes the claim of a request it refuses). Each row says claimed, follower (of the request `leader` of the same set), replay (with the stored status and body), conflict (another body) or pending.';

CREATE OR REPLACE FUNCTION kiln_private.credentials(p_hashes bytea[])
 RETURNS TABLE(key_hash bytea, id uuid, account_id uuid, workspace_id uuid, scopes text[], rpm integer, tier text, last_used_at timestamp with time zone)
 LANGUAGE sql
 STABLE
AS $function$
  -- One index lookup per hash, whatever the size of the tables: the current secret by the keys'
  -- unique hash index, else a rotation's grace secret by its own, then the account by its key.
  -- A secret is live while its key is: not revoked, not expired, a session not idle; a secret
  -- a rotation replaced also until its grace ends. The admin scope counts only for admins.
  select h.key_hash, k.id, k.account_id, k.workspace_id,
         case when a.is_admin or a.admin_by_group then k.scopes else pg_catalog.array_remove(k.scopes, 'admin'::text) end,
         k.rpm, a.tier, k.last_used_at
  from pg_catalog.unnest(p_hashes) as h(key_hash)
  cross join lateral (
    select x.id, x.account_id, x.workspace_id, x.scopes, x.rpm, x.last_used_at, x.created_at, x.revoked_at, x.expires_at, x.idle_seconds
    from kiln_private.api_keys x where x.key_hash operator(pg_catalog.=) h.key_hash
    union all
    select x.id, x.account_id, x.workspace_id, x.scopes, x.rpm, x.last_used_at, x.created_at, x.revoked_at, x.expires_at, x.idle_seconds
    from kiln_private.api_key_grace g join kiln_private.api_keys x on x.id operator(pg_catalog.=) g.key_id
    where g.key_hash operator(pg_catalog.=) h.key_hash and g.expires_at operator(pg_catalog.>) pg_catalog.now()
  ) k
  join kiln_private.accounts a on a.id operator(pg_catalog.=) k.account_id
  where k.revoked_at is null
    and (k.expires_at is null or k.expires_at operator(pg_catalog.>) pg_catalog.now())
    and (k.idle_seconds is null
         or coalesce(k.last_used_at, k.created_at) operator(pg_catalog.+) pg_catalog.make_interval(secs => k.idle_seconds) operator(pg_catalog.>) pg_catalog.now());
$function$;
comment on function kiln_private.credentials(bytea[]) is 'The live credentials (API keys and console sessions) among SHA-256 hashes, with each key''s stored last use: revoked, expired, idle sessions and secrets past their rotation grace are absent, so they all get the same 401. Inlined into its callers (no SET clause): every name is schema-qualified.';

CREATE OR REPLACE FUNCTION kiln_private.debit_key_pools(p_keys uuid[], p_periods timestamp with time zone[], p_amounts bigint[], p_budgets bigint[])
 RETURNS uuid[]
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- kiln_private.debit_pools for keys' own budgets: keys locked in id order.
  with debited as (
    insert into kiln_private.key_budget_periods as b (key_id, period_start, held_micros)
      select u.k, u.period, u.amount
      from unnest(p_keys, p_periods, p_amounts, p_budgets) as u(k, period, amount, budget)
      where u.budget is null or u.amount <= u.budget
      order by u.k
    on conflict (key_id, period_start) do update
      set held_micros = b.held_micros + excluded.held_micros
      where p_budgets[array_position(p_keys, b.key_id)] is null
         or b.held_micros + b.settled_micros + excluded.held_micros <= p_budgets[array_position(p_keys, b.key_id)]
    returning b.key_id)
  select coalesce(array_agg(key_id), '{}') from debited;
$function$;
comment on function kiln_private.debit_key_pools(uuid[],timestamp with time zone[],bigint[],bigint[]) is 'Adds each amount to its key''s held total for the period when settled + held stays within the key''s budget, keys in id order; returns the keys debited.';

CREATE OR REPLACE FUNCTION kiln_private.debit_pools(p_pools uuid[], p_periods timestamp with time zone[], p_amounts bigint[], p_budgets bigint[])
 RETURNS uuid[]
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- One atomic check-and-debit per pool period row, pools locked in id order (as everywhere
  -- budgets are locked, so concurrent callers cannot deadlock): settled + held never exceeds
  -- the budget (null = unlimited). Returns the pools debited.
  with debited as (
    insert into kiln_private.budget_periods as b (pool_id, period_start, held_micros)
      select u.pool, u.period, u.amount
      from unnest(p_pools, p_periods, p_amounts, p_budgets) as u(pool, period, amount, budget)
      where u.budget is null or u.amount <= u.budget
      order by u.pool
    on conflict (pool_id, period_start) do update
      set held_micros = b.held_micros + excluded.held_micros
      where p_budgets[array_position(p_pools, b.pool_id)] is null
         or b.held_micros + b.settled_micros + excluded.held_micros <= p_budgets[array_position(p_pools, b.pool_id)]
    returning b.pool_id)
  select coalesce(array_agg(pool_id), '{}') from debited;
$function$;
comment on function kiln_private.debit_pools(uuid[],timestamp with time zone[],bigint[],bigint[]) is 'Adds each amount to its pool''s held total for the period when settled + held stays within the pool''s budget (null = unlimited), pools in id order; returns the pools debited.';

CREATE OR REPLACE FUNCTION kiln_private.duration_text(p_seconds integer)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select case
    when p_seconds % 86400 = 0 and p_seconds <> 0 then (p_seconds / 86400)::text || case when p_seconds = 86400 then ' day' else ' days' end
    when p_seconds % 3600 = 0 and p_seconds <> 0 then (p_seconds / 3600)::text || case when p_seconds = 3600 then ' hour' else ' hours' end
    when p_seconds % 60 = 0 and p_seconds <> 0 then (p_seconds / 60)::text || case when p_seconds = 60 then ' minute' else ' minutes' end
    else p_seconds::text || case when p_seconds = 1 then ' second' else ' seconds' end
  end;
$function$;
comment on function kiln_private.duration_text(integer) is 'A number of seconds in words, in the largest whole unit (432000 → ''5 days'', 5400 → ''90 minutes''), for messages a person reads.';

CREATE OR REPLACE FUNCTION kiln_private.emit_event(p_scope_id uuid, p_type text, p_subject_id uuid, p_data json, p_endpoint_id uuid DEFAULT NULL::uuid)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id bigint;
  v_jobs graphile_worker.job_spec[];
begin
  insert into kiln_private.events (scope_id, type, subject_id, data)
    values (p_scope_id, p_type, p_subject_id, p_data)
    returning id into v_id;
  -- One delivery and one job per matching endpoint, in this transaction: never lost.
  with d as (
    insert into kiln_private.webhook_deliveries (endpoint_id, event_id)
    select e.id, v_id from kiln_private.webhook_endpoints e
    where e.scope_id = p_scope_id and e.enabled
      and (p_endpoint_id is null or e.id = p_endpoint_id)
      and (e.events is null or p_type = any (e.events))
    returning id, endpoint_id)
  select array_agg(kiln_private.webhook_job(d.id, d.endpoint_id, 0, 0)) into v_jobs from d;
  if v_jobs is not null then
    perform graphile_worker.add_jobs(v_jobs);
  end if;
  -- GET /events streams wake up and read the table.
  perform pg_notify('kiln_status', json_build_object('k', 'events', 'id', p_scope_id)::text);
  return v_id;
end;
$function$;
comment on function kiln_private.emit_event(uuid,text,uuid,json,uuid) is 'Writes one event to the outbox and, in the same transaction, a delivery plus a webhook__deliver job for each enabled endpoint of the scope whose filter matches (only p_endpoint_id when given); notifies GET /events streams. Returns the event id.';

CREATE OR REPLACE FUNCTION kiln_private.end_generation(p_id uuid, p_error text)
 RETURNS boolean
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
begin
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if not found or v_gen.status in ('completed', 'failed') then
    return false;
  end if;
  if v_gen.charge_id is not null then
    perform kiln.release_charge(v_gen.charge_id);
  end if;
  update kiln_private.generations
    set status = 'failed',
        error = left(coalesce(nullif(p_error, ''), 'generation failed'), 1000),
        waiting = false,
        finished_at = now(),
        updated_at = now()
    where id = p_id;
  -- One JSON object per line (json_build_object escapes newlines inside strings).
  perform set_config('kiln.ended_generations',
    coalesce(current_setting('kiln.ended_generations', true), '') ||
      json_build_object('type', v_gen.type, 'model_id', v_gen.model_id,
                        'status', case when p_error = 'canceled' then 'canceled' else 'failed' end)::text || E'\n',
    true);
  return true;
end;
$function$;
comment on function kiln_private.end_generation(uuid,text) is 'Fails a generation and releases its reservation, nothing else (callers handle its run and slots); notes it for kiln.take_ended_generations. False when already settled.';

CREATE OR REPLACE FUNCTION kiln_private.enqueue_generations(p_ids uuid[], p_max_attempts integer)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
begin
  if coalesce(cardinality(p_ids), 0) = 0 then
    return;
  end if;
  -- One call for the batch; job key = generation id, so a duplicate enqueue collapses into one job.
  -- The job's cap is Kiln's (generation_job_attempts); p_max_attempts stays on the generations.
  perform graphile_worker.add_jobs(array(
    select row('generation__run', json_build_object('id', g), null, null, kiln_private.generation_job_attempts(), g::text, null, null)::graphile_worker.job_spec
    from unnest(p_ids) g));
end;
$function$;
comment on function kiln_private.enqueue_generations(uuid[],integer) is 'Queues generation__run jobs for existing generations (graphile_worker.add_jobs; job key = generation id; max_attempts kiln_private.generation_job_attempts(), whatever p_max_attempts).';

CREATE OR REPLACE FUNCTION kiln_private.enqueue_new_generations(p_ids uuid[], p_max_attempts integer)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_task int;
begin
  if coalesce(cardinality(p_ids), 0) = 0 then
    return;
  end if;
  -- The one place Kiln names graphile-worker's private tables, kept only while it measurably pays
  -- (≥ 10 % on POST /generations; test/db.worker_api.test.ts allows no other). These are brand-new
  -- generation ids, so no job can hold their key: the rows are exactly what add_jobs writes for a
  -- new key, without its clearing of locked jobs' keys (test/db.enqueue.test.ts compares the two
  -- and fails when graphile-worker's table layout changes). Measured against plain
  -- graphile_worker.add_jobs by the bench's generations section (paired rounds, queue drained
  -- before each; 2-core VM shared with other work, load average 13–37), three runs on 2026-11-24/25:
  -- POST /generations +13.6 % (1,345 vs 1,022 req/s), +8.7 % (846 vs 759), +33.3 % (777 vs 654);
  -- median +13.6 %, and less Postgres CPU per request in every run (344 vs 532 µs, 311 vs 386,
  -- 292 vs 392). Per call on one connection: 80–150 µs for one id vs 570–1,310 µs with add_jobs.
  -- When a run on a quiet machine shows under 10 % (BENCH.md, Generations), this function goes
  -- back to kiln_private.enqueue_generations.
  select id into v_task from graphile_worker._private_tasks where identifier = 'generation__run';
  if not found then
    perform kiln_private.enqueue_generations(p_ids, p_max_attempts);
    return;
  end if;
  insert into graphile_worker._private_jobs (task_id, payload, max_attempts, key)
    select v_task, json_build_object('id', g), kiln_private.generation_job_attempts(), g::text from unnest(p_ids) g;
  perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":' || cardinality(p_ids)::text || '}');
end;
$function$;
comment on function kiln_private.enqueue_new_generations(uuid[],integer) is 'Queues generation__run jobs for generations created in this transaction (their keys cannot exist yet): the rows graphile_worker.add_jobs would write, in one insert — the one function allowed to name graphile-worker''s private tables, while it gains ≥ 10 % on POST /generations (median of three bench runs on 2026-11-24/25: +13.6 %; BENCH.md). Every other enqueue uses kiln_private.enqueue_generations (add_jobs).';

CREATE OR REPLACE FUNCTION kiln_private.fail_workflow_run(p_run_id uuid, p_error text)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_n int;
begin
  update kiln_private.workflow_runs
    set status = 'failed', error = left(p_error, 2000), completed_at = clock_timestamp(), updated_at = now()
    where id = p_run_id and status in ('pending', 'running');
  if not found then
    return;
  end if;
  -- Downstream outputs (and anything not started yet) are abandoned; running ones may still record.
  v_n := kiln_private.abandon_workflow_outputs(p_run_id, null);
  update kiln_private.workflow_runs set abandoned = abandoned + v_n where id = p_run_id;
end;
$function$;
comment on function kiln_private.fail_workflow_run(uuid,text) is 'Fails a pending or running run with a client-safe message and abandons its not-started outputs.';

CREATE OR REPLACE FUNCTION kiln_private.generation_body(g kiln_private.generations)
 RETURNS json
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'id', g.id,
    'status', g.status,
    'type', g.type,
    'result', case when g.status = 'completed' then g.result end,
    'error', case when g.status = 'failed' then g.error end,
    'cost_micros', g.cost_micros,
    'prompt', g.request->>'prompt');
$function$;
comment on function kiln_private.generation_body(kiln_private.generations) is 'A generation as the API reads it: id, status, type, result (completed), error (failed), billed cost and the request''s prompt.';

CREATE OR REPLACE FUNCTION kiln_private.generation_job_attempts()
 RETURNS smallint
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$ select 25::smallint $function$;
comment on function kiln_private.generation_job_attempts() is 'max_attempts of every generation__run job: a job is picked up once per execution and once per takeover after a crash (a retry or a slot wait is a new job), so the cap only has to stay above KILN_GENERATION_MAX_CRASHES (at most 20); Kiln counts attempts and crashes itself, on the generation.';

CREATE OR REPLACE FUNCTION kiln_private.idempotency_operation(p_origin text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select case when p_origin = 'mcp' then 'mcp generate' else 'POST /generations' end;
$function$;
comment on function kiln_private.idempotency_operation(text) is 'The Idempotency-Key operation of a generation created through p_origin: REST (api, app) and MCP keep separate keys.';

CREATE OR REPLACE FUNCTION kiln_private.insert_generations(p_account_ids uuid[], p_key_ids uuid[], p_workspace_ids uuid[], p_origins text[], p_types text[], p_model_ids text[], p_model_versions bigint[], p_requests jsonb[], p_reserves bigint[], p_max_attempts integer, p_idem_keys text[] DEFAULT NULL::text[], p_fingerprints bytea[] DEFAULT NULL::bytea[], p_idem_ttl_seconds integer DEFAULT 86400)
 RETURNS TABLE(ord integer, id uuid, error_code text, error_message text, replayed boolean)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_column
declare
  c_err text[];
  c_msg text[];
  c_gid uuid[];
  c_charge uuid[];
  c_claim text[];
  c_lead int[];
  c_stored uuid[];
  v_idx int[];
  r_charge uuid[];
  r_err text[];
  r_msg text[];
  v_created uuid[];
  v_n int;
begin
  if coalesce(cardinality(p_account_ids), 0) = 0 then
    return;
  end if;
  -- 1. The generation rules, for the whole set.
  select array_agg(x.err order by x.i), array_agg(x.msg order by x.i), array_agg(kiln_private.uuid_v7() order by x.i)
    into c_err, c_msg, c_gid
    from (
      select s.i,
             case
               when p_types[s.i] is null or p_types[s.i] not in ('image', 'code') then 'KI001'
               when m.id is null then 'KI001'
               -- The caller priced the reservation from a cached catalog entry: refuse a stale one.
               when p_model_versions[s.i] is not null
                    and p_model_versions[s.i] <> (extract(epoch from m.updated_at) * 1000000)::bigint then 'KS001'
               when (p_types[s.i] = 'image') <> (m.category = 'image') then 'KI001'
             end as err,
             case
               when p_types[s.i] is null or p_types[s.i] not in ('image', 'code') then 'type must be image or code'
               when m.id is null then format('model "%s" is not in the catalog', left(p_model_ids[s.i], 200))
               when p_model_versions[s.i] is not null
                    and p_model_versions[s.i] <> (extract(epoch from m.updated_at) * 1000000)::bigint then 'the catalog entry changed; price again'
               when (p_types[s.i] = 'image') <> (m.category = 'image') then format('model "%s" cannot produce %s output', m.id, p_types[s.i])
             end as msg
      from generate_subscripts(p_account_ids, 1) as s(i)
      left join kiln_private.models m on m.id = p_model_ids[s.i] and m.enabled
    ) x;
  c_charge := array_fill(null::uuid, array[cardinality(p_account_ids)]);

  -- 1b. Idempotency keys: a replay answers what was stored even when the request would now be
  --     refused; only claimants go on (followers, replays and conflicts reserve nothing).
  if p_idem_keys is not null then
    select array_agg(c.outcome order by c.ord), array_agg(c.leader order by c.ord),
           array_agg((c.response_body->>'id')::uuid order by c.ord)
      into c_claim, c_lead, c_stored
      from kiln_private.claim_idempotency_keys(
        p_account_ids, array(select kiln_private.idempotency_operation(o) from unnest(p_origins) with ordinality u(o, i) order by i), p_idem_keys, p_fingerprints,
        array_fill(202, array[cardinality(p_account_ids)]),
        array(select jsonb_build_object('id', c_gid[s.i], 'status', 'pending') from generate_subscripts(p_account_ids, 1) as s(i) order by s.i),
        p_idem_ttl_seconds) c;
    for v_n in 1 .. cardinality(p_account_ids) loop
      if c_claim[v_n] = 'conflict' then
        c_err[v_n] := 'KD001';
        c_msg[v_n] := 'this idempotency key was already used with a different request; use a new key for a new request';
      elsif c_claim[v_n] = 'pending' then
        c_err[v_n] := 'KD002';
        c_msg[v_n] := 'a request with this idempotency key is still being processed; retry';
      elsif c_claim[v_n] in ('follower', 'replay') then
        c_err[v_n] := '-';
      end if;
    end loop;
  end if;

  -- 2. The reservations of the requests that passed (reserve_budgets' rules, its ledger rows).
  select array_agg(s.i order by s.i) into v_idx from generate_subscripts(p_account_ids, 1) as s(i) where c_err[s.i] is null;
  if v_idx is not null then
    select array_agg(r.charge_id order by r.ord), array_agg(r.error_code order by r.ord), array_agg(r.error_message order by r.ord)
      into r_charge, r_err, r_msg
      from kiln_private.reserve_budgets(
        array(select p_account_ids[i] from unnest(v_idx) as u(i)),
        array(select p_workspace_ids[i] from unnest(v_idx) as u(i)),
        array(select p_key_ids[i] from unnest(v_idx) as u(i)),
        array(select p_model_ids[i] from unnest(v_idx) as u(i)),
        array(select p_origins[i] from unnest(v_idx) as u(i)),
        array(select p_reserves[i] from unnest(v_idx) as u(i)),
        array(select c_gid[i] from unnest(v_idx) as u(i)),
        array_fill(null::uuid, array[cardinality(v_idx)]),
        array_fill(null::text, array[cardinality(v_idx)])) r;
    for v_n in 1 .. cardinality(v_idx) loop
      c_charge[v_idx[v_n]] := r_charge[v_n];
      c_err[v_idx[v_n]] := r_err[v_n];
      c_msg[v_idx[v_n]] := r_msg[v_n];
    end loop;

    -- 3. The generations that got their reservation, and their jobs.
    with gens as (
      insert into kiln_private.generations
        (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, charge_id, max_attempts)
      select c_gid[s.i], p_account_ids[s.i], p_key_ids[s.i], p_workspace_ids[s.i], p_origins[s.i], p_model_ids[s.i],
             p_types[s.i], p_requests[s.i], p_reserves[s.i], c_charge[s.i], p_max_attempts
      from generate_subscripts(p_account_ids, 1) as s(i)
      where c_charge[s.i] is not null
      returning id, created_at
    )
    select array_agg(g.id order by g.created_at) into v_created from gens g;
    perform kiln_private.enqueue_new_generations(v_created, p_max_attempts);
  end if;

  -- 4. A refused claimant keeps nothing: its retry may succeed later (one primary-key delete each).
  if p_idem_keys is not null then
    for v_n in 1 .. cardinality(p_account_ids) loop
      if c_claim[v_n] = 'claimed' and c_charge[v_n] is null then
        delete from kiln_private.idempotency_keys
          where account_id = p_account_ids[v_n] and operation = kiln_private.idempotency_operation(p_origins[v_n]) and key = p_idem_keys[v_n];
      end if;
    end loop;
  end if;

  return query
    select s.i::int,
           case
             when c_charge[s.i] is not null then c_gid[s.i]
             when c_claim[s.i] = 'replay' then c_stored[s.i]
             when c_claim[s.i] = 'follower' and c_charge[c_lead[s.i]] is not null then c_gid[c_lead[s.i]]
           end,
           case when c_claim[s.i] = 'follower' then c_err[c_lead[s.i]] when c_err[s.i] = '-' then null else c_err[s.i] end,
           case when c_claim[s.i] = 'follower' then c_msg[c_lead[s.i]] when c_err[s.i] = '-' then null else c_msg[s.i] end,
           coalesce(c_claim[s.i] = 'replay' or (c_claim[s.i] = 'follower' and c_charge[c_lead[s.i]] is not null), false)
    from generate_subscripts(p_account_ids, 1) as s(i)
    order by s.i;
end;
$function$;
comment on function kiln_private.insert_generations(uuid[],uuid[],uuid[],text[],text[],text[],bigint[],jsonb[],bigint[],integer,text[],bytea[],integer) is 'The generation primitive: claims the requests'' idempotency keys (kiln_private.claim_idempotency_keys; a replay answers the stored id, another body KD001), checks each request''s type and model (KI001) and its catalog price version (KS001), reserves the worst case (kiln_private.reserve_budgets), inserts the generations and queues their generation__run jobs, for a whole set at once. Each row carries the new (or replayed) id or the request''s own refusal; the others still go in.';

CREATE OR REPLACE FUNCTION kiln_private.key_json(k kiln_private.api_keys, p_used bigint)
 RETURNS json
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- liveSecrets: the current secret while the key is live, plus the older ones still in their
  -- grace; graceEndsAt: when the last older one stops working (rounded up to the second).
  select json_build_object(
    'id', k.id, 'name', k.name, 'prefix', k.display_prefix, 'scopes', k.scopes, 'rpm', k.rpm,
    'workspaceId', k.workspace_id, 'budgetMicros', k.budget_micros, 'usedMicros', coalesce(p_used, 0),
    'createdAt', to_char(k.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'lastUsedAt', to_char(k.last_used_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'expiresAt', to_char(k.expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'revokedAt', to_char(k.revoked_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'liveSecrets', case when g.live then 1 + g.n else 0 end,
    'graceEndsAt', case when g.live and g.n > 0 then
      to_char((date_trunc('second', g.until) + case when g.until > date_trunc('second', g.until) then interval '1 second' else interval '0' end)
              at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') end)
  from (select k.revoked_at is null and (k.expires_at is null or k.expires_at > now()) as live,
               count(x.key_hash)::int as n, max(x.expires_at) as until
        from kiln_private.api_key_grace x where x.key_id = k.id and x.expires_at > now()) g;
$function$;
comment on function kiln_private.key_json(kiln_private.api_keys,bigint) is 'A key as GET /keys lists it (never its hash or a secret), with liveSecrets (the current secret and older ones in their grace; 0 once revoked or expired) and graceEndsAt (when the last older secret stops working; null when none).';

CREATE OR REPLACE FUNCTION kiln_private.key_period(p_account_id uuid, p_workspace_id uuid)
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select kiln_private.period_start(case when p_workspace_id is null then a.period_anchor else w.plan_period_anchor end, now())
  from kiln_private.accounts a left join kiln_private.workspaces w on w.id = p_workspace_id
  where a.id = p_account_id;
$function$;
comment on function kiln_private.key_period(uuid,uuid) is 'Start of the current billing period of a key''s scope (its workspace''s, else its account''s).';

CREATE OR REPLACE FUNCTION kiln_private.key_used(k kiln_private.api_keys)
 RETURNS bigint
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- A key with its own budget: its running total. Any other: what its charges of the scope's
  -- current period hold or settled (the day roll-ups plus the open reservations).
  select case when k.budget_micros is not null then
    (select coalesce(b.held_micros + b.settled_micros, 0) from kiln_private.key_budget_periods b
     where b.key_id = k.id and b.period_start = kiln_private.key_period(k.account_id, k.workspace_id))
  else
    (select coalesce(sum(d.spend_micros), 0) from kiln_private.charge_days d
     where d.pool_id = coalesce(k.workspace_id, k.account_id) and d.key_id = k.id
       and d.period_start = kiln_private.key_period(k.account_id, k.workspace_id))
    + (select coalesce(sum(c.reserved_micros), 0) from kiln_private.charges c
       where c.key_id = k.id and c.status = 'reserved'
         and c.period_start = kiln_private.key_period(k.account_id, k.workspace_id))
  end;
$function$;
comment on function kiln_private.key_used(kiln_private.api_keys) is 'What a key spent this period of its scope (settled plus held), for GET /keys.';

CREATE OR REPLACE FUNCTION kiln_private.lease_held(p_worker_id text, p_job_id bigint, p_stale_seconds integer)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- The one lease rule, for generations and workflow outputs alike: the executing worker is alive
  -- and still holds the job it runs under (a job that failed or was released lets go of it).
  return p_worker_id is not null
     and kiln_private.worker_alive(p_worker_id, p_stale_seconds)
     and exists (select 1 from graphile_worker.jobs j where j.id = p_job_id and j.locked_at is not null);
end;
$function$;
comment on function kiln_private.lease_held(text,bigint,integer) is 'Whether the worker that leased a generation or workflow output still runs it (alive, its job still locked; read from the graphile_worker.jobs view): such work is never taken over.';

CREATE OR REPLACE FUNCTION kiln_private.lease_key_held(p_lease_key integer)
 RETURNS boolean
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select exists (
    select 1 from pg_locks l
    where l.locktype = 'advisory' and l.granted
      and l.database = (select oid from pg_database where datname = current_database())
      and l.classid = 1263094862::oid and l.objid = p_lease_key::oid and l.objsubid = 2);
$function$;
comment on function kiln_private.lease_key_held(integer) is 'Whether some session of this database holds the worker lease lock with this key.';

CREATE OR REPLACE FUNCTION kiln_private.note_workflow_progress(p_run_id uuid, p_settled integer)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_run kiln_private.workflow_runs;
begin
  update kiln_private.workflow_runs
    set settled = settled + p_settled, updated_at = now()
    where id = p_run_id
    returning * into v_run;
  if v_run.status in ('pending', 'running') and v_run.settled = v_run.total then
    update kiln_private.workflow_runs
      set status = 'completed', started_at = coalesce(started_at, clock_timestamp()), completed_at = clock_timestamp()
      where id = p_run_id;
    perform kiln_private.write_back_workflow_run(p_run_id);
  end if;
  if v_run.settled + v_run.abandoned >= v_run.total then
    -- Nothing left in flight: the deadline check is no longer needed.
    perform graphile_worker.remove_job(kiln_private.workflow_job_key(p_run_id, null));
  end if;
end;
$function$;
comment on function kiln_private.note_workflow_progress(uuid,integer) is 'Counts newly settled outputs; completes the run (with write-back) when all settled without failure.';

CREATE OR REPLACE FUNCTION kiln_private.nudge_waiting_generation(p_account_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_next kiln_private.generations;
begin
  -- Locked, so that it cannot interleave with kiln.start_generation of the same generation (which
  -- locks it too); one being started is skipped for the next.
  select * into v_next from kiln_private.generations
    where account_id = p_account_id and status = 'pending' and waiting
    order by created_at
    limit 1
    for update skip locked;
  if found then
    -- Same job key: moves the waiting job's run_at to now. Should a worker have just picked that
    -- job up, add_job queues a new one instead and start_generation ends the old (superseded).
    perform graphile_worker.add_job('generation__run', json_build_object('id', v_next.id),
                                    job_key => v_next.id::text, max_attempts => kiln_private.generation_job_attempts());
  end if;
end;
$function$;
comment on function kiln_private.nudge_waiting_generation(uuid) is 'Runs the oldest slot-waiting generation of an account now (called when a slot frees); one being started at this moment is skipped.';

CREATE OR REPLACE FUNCTION kiln_private.object_generation_id(p_path text)
 RETURNS uuid
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- Output paths end in the generation id: <account>/generations/<id>.<ext>, <account>/workflows/<run>/<id>.<ext>.
  select (regexp_match(p_path, '/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.[a-z]+$'))[1]::uuid;
$function$;
comment on function kiln_private.object_generation_id(text) is 'The generation id an output path ends in (null for other paths).';

CREATE OR REPLACE FUNCTION kiln_private.period_end(p_anchor timestamp with time zone, p_period_start timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- A period lasts 28 to 31 days, so 32 days after its start is inside the next one.
  select kiln_private.period_start(p_anchor, p_period_start + interval '32 days');
$function$;
comment on function kiln_private.period_end(timestamp with time zone,timestamp with time zone) is 'The end of the budget period that starts at p_period_start (anchored at p_anchor): the next period''s start.';

CREATE OR REPLACE FUNCTION kiln_private.period_start(anchor timestamp with time zone, at timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  -- Whole months elapsed since the anchor; the period is [anchor + n months, anchor + n+1 months), in UTC.
  select ((anchor at time zone 'UTC') + make_interval(months => greatest(0,
    (extract(year from age(at at time zone 'UTC', anchor at time zone 'UTC')) * 12
     + extract(month from age(at at time zone 'UTC', anchor at time zone 'UTC')))::int))) at time zone 'UTC';
$function$;
comment on function kiln_private.period_start(timestamp with time zone,timestamp with time zone) is 'Start of the monthly budget period containing `at`, for periods anchored at `anchor` (month arithmetic in UTC; inlined by the planner).';

CREATE OR REPLACE FUNCTION kiln_private.queue_delivery(p_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v record;
begin
  update kiln_private.webhook_deliveries set status = 'pending', tries = 0, round = round + 1,
    next_attempt_at = clock_timestamp(), failed_at = null
    where id = p_id returning id, endpoint_id, round into v;
  perform graphile_worker.add_jobs(array[kiln_private.webhook_job(v.id, v.endpoint_id, v.round, 0)]);
end;
$function$;
comment on function kiln_private.queue_delivery(uuid) is 'Starts a new round for a delivery (same message, same webhook-id): pending, tries 0, a job now.';

CREATE OR REPLACE FUNCTION kiln_private.rebuild_account_spend()
 RETURNS bigint
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_n bigint;
begin
  insert into kiln_private.account_spend (account_id, period_start, period_end, used_micros)
    select a.id, p.s, kiln_private.period_end(a.period_anchor, p.s), coalesce(b.held_micros + b.settled_micros, 0)
    from kiln_private.accounts a
    cross join lateral (select kiln_private.period_start(a.period_anchor, now()) as s) p
    left join kiln_private.budget_periods b on b.pool_id = a.id and b.period_start = p.s
  on conflict (account_id) do update
    set period_start = excluded.period_start, period_end = excluded.period_end, used_micros = excluded.used_micros
    where (account_spend.period_start, account_spend.period_end, account_spend.used_micros)
          is distinct from (excluded.period_start, excluded.period_end, excluded.used_micros);
  get diagnostics v_n = row_count;
  return v_n;
end;
$function$;
comment on function kiln_private.rebuild_account_spend() is 'Every account''s kiln_private.account_spend row from its current period''s budget_periods row (the backfill; a restore or a bulk load runs it again). Returns the rows written.';

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
     charges, settled_charges, released_charges, spend_micros)
  select pool_id, period_start, (created_at at time zone 'UTC')::date, account_id, workspace_id, key_id, model_id, origin,
         count(*), count(*) filter (where status = 'settled'), count(*) filter (where status = 'released'),
         coalesce(sum(settled_micros), 0)::bigint
  from kiln_private.charges
  where status <> 'reserved'
  group by pool_id, period_start, (created_at at time zone 'UTC')::date, account_id, workspace_id, key_id, model_id, origin;
  get diagnostics v_rows = row_count;
  return v_rows;
end;
$function$;
comment on function kiln_private.rebuild_charge_days() is 'Recomputes kiln_private.charge_days from the whole ledger (under a share lock on kiln_private.charges, so no charge changes meanwhile). Returns the rollup''s row count. For migrations and repair; the triggers keep it exact otherwise.';

CREATE OR REPLACE FUNCTION kiln_private.require_admin(p_account_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- The authorization path already refused a non-admin (the admin scope counts only for admins);
  -- a write checks again in its own transaction, so a revoked admin cannot race it.
  perform 1 from kiln_private.accounts a where a.id = p_account_id and (a.is_admin or a.admin_by_group);
  if not found then
    raise exception 'This account is not an admin.' using errcode = 'KF001';
  end if;
end;
$function$;
comment on function kiln_private.require_admin(uuid) is 'Raises KF001 ("This account is not an admin.") unless the account is an admin (operator flag or SSO group).';

CREATE OR REPLACE FUNCTION kiln_private.require_key_rights(p_caller_scopes text[], p_scopes text[])
 RETURNS void
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_extra text[];
begin
  select array_agg(s order by s) into v_extra from unnest(p_scopes) s where not (s = any (coalesce(p_caller_scopes, '{}')));
  if v_extra is not null then
    raise exception 'This key has scopes the caller lacks (%): only a credential holding every scope of a key may read, rotate or revoke it.',
      array_to_string(v_extra, ', ') using errcode = 'KF002';
  end if;
end;
$function$;
comment on function kiln_private.require_key_rights(text[],text[]) is 'Raises KF002 (403 forbidden) unless the caller''s scopes hold every scope of the key (p_scopes). Unknown caller scopes (null) hold none.';

CREATE OR REPLACE FUNCTION kiln_private.reserve_budgets(p_account_ids uuid[], p_workspace_ids uuid[], p_key_ids uuid[], p_model_ids text[], p_origins text[], p_amounts bigint[], p_generation_ids uuid[], p_run_ids uuid[], p_node_ids text[])
 RETURNS TABLE(ord integer, charge_id uuid, error_code text, error_message text)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_column
declare
  v_n int := coalesce(cardinality(p_account_ids), 0);
  c_err text[];
  c_msg text[];
  c_pool uuid[];
  c_budget bigint[];
  c_kbudget bigint[];
  c_period timestamptz[];
  c_id uuid[];
  v_pools uuid[];
  v_periods timestamptz[];
  v_totals bigint[];
  v_budgets bigint[];
  v_admitted uuid[];
  v_kadmitted uuid[] := '{}';
  v_i int;
begin
  if v_n = 0 then
    return;
  end if;
  -- 1. The reservation rules, for the whole set; each request gets its pool, budget and period,
  --    and its key's own budget (null = the key has none: only the pool decides).
  select array_agg(x.err order by x.i), array_agg(x.msg order by x.i), array_agg(x.pool order by x.i),
         array_agg(x.budget order by x.i), array_agg(x.kbudget order by x.i), array_agg(x.period order by x.i),
         array_agg(kiln_private.uuid_v7() order by x.i)
    into c_err, c_msg, c_pool, c_budget, c_kbudget, c_period, c_id
    from (
      select s.i,
             case
               when p_amounts[s.i] is null or p_amounts[s.i] < 0 then '22023'
               when acc.id is null then 'KN001'
               when acc.tier = 'blocked' then 'KQ001'
               when p_workspace_ids[s.i] is not null and (ws.id is null or ws.plan_status <> 'active') then 'KP001'
               when p_workspace_ids[s.i] is not null and mem.account_id is null then 'KP001'
             end as err,
             case
               when p_amounts[s.i] is null or p_amounts[s.i] < 0 then 'reservation must be a non-negative amount'
               when acc.id is null then 'account not found'
               when acc.tier = 'blocked' then 'this account cannot start generations'
               when p_workspace_ids[s.i] is not null and (ws.id is null or ws.plan_status <> 'active') then 'the workspace''s Team plan is not active'
               when p_workspace_ids[s.i] is not null and mem.account_id is null then 'the key''s owner is no longer a member of the workspace'
             end as msg,
             case when p_workspace_ids[s.i] is null then acc.id else ws.id end as pool,
             case when p_workspace_ids[s.i] is null then acc.budget_micros else ws.plan_budget_micros end as budget,
             k.budget_micros as kbudget,
             kiln_private.period_start(case when p_workspace_ids[s.i] is null then acc.period_anchor else ws.plan_period_anchor end, now()) as period
      from generate_subscripts(p_account_ids, 1) as s(i)
      left join kiln_private.accounts acc on acc.id = p_account_ids[s.i]
      left join kiln_private.workspaces ws on ws.id = p_workspace_ids[s.i]
      left join kiln_private.workspace_members mem
        on mem.workspace_id = p_workspace_ids[s.i] and mem.account_id = p_account_ids[s.i] and mem.left_at is null
      left join kiln_private.api_keys k on k.id = p_key_ids[s.i]
    ) x;

  -- 2. One check-and-debit per pool for the set's total, then one per key budget: the same
  --    transaction, so a request holds both or (below) neither.
  select array_agg(t.pool order by t.pool), array_agg(t.period order by t.pool), array_agg(t.total order by t.pool),
         array_agg(t.budget order by t.pool)
    into v_pools, v_periods, v_totals, v_budgets
    from (select c_pool[s.i] as pool, min(c_period[s.i]) as period, sum(p_amounts[s.i])::bigint as total, min(c_budget[s.i]) as budget
          from generate_subscripts(p_account_ids, 1) as s(i) where c_err[s.i] is null group by 1) t;
  v_admitted := case when v_pools is null then '{}' else kiln_private.debit_pools(v_pools, v_periods, v_totals, v_budgets) end;
  select array_agg(t.k order by t.k), array_agg(t.period order by t.k), array_agg(t.total order by t.k),
         array_agg(t.budget order by t.k)
    into v_pools, v_periods, v_totals, v_budgets
    from (select p_key_ids[s.i] as k, min(c_period[s.i]) as period, sum(p_amounts[s.i])::bigint as total, min(c_kbudget[s.i]) as budget
          from generate_subscripts(p_account_ids, 1) as s(i) where c_err[s.i] is null and c_kbudget[s.i] is not null group by 1) t;
  if v_pools is not null then
    v_kadmitted := kiln_private.debit_key_pools(v_pools, v_periods, v_totals, v_budgets);
  end if;

  -- 3. A request whose pool or key budget could not take the set's total gives back what the
  --    other debited for it, then is decided on its own, in arrival order. Row locks are already
  --    held by this transaction, so nobody sees the amounts in between.
  for v_i in
    select s.i from generate_subscripts(p_account_ids, 1) as s(i)
    where c_err[s.i] is null
      and (not (c_pool[s.i] = any (v_admitted)) or (c_kbudget[s.i] is not null and not (p_key_ids[s.i] = any (v_kadmitted))))
    order by s.i
  loop
    if c_pool[v_i] = any (v_admitted) then
      update kiln_private.budget_periods set held_micros = held_micros - p_amounts[v_i]
        where pool_id = c_pool[v_i] and period_start = c_period[v_i];
    end if;
    if c_kbudget[v_i] is not null and p_key_ids[v_i] = any (v_kadmitted) then
      update kiln_private.key_budget_periods set held_micros = held_micros - p_amounts[v_i]
        where key_id = p_key_ids[v_i] and period_start = c_period[v_i];
    end if;
  end loop;
  for v_i in
    select s.i from generate_subscripts(p_account_ids, 1) as s(i)
    where c_err[s.i] is null
      and (not (c_pool[s.i] = any (v_admitted)) or (c_kbudget[s.i] is not null and not (p_key_ids[s.i] = any (v_kadmitted))))
    order by c_pool[s.i], s.i
  loop
    if cardinality(kiln_private.debit_pools(array[c_pool[v_i]], array[c_period[v_i]], array[p_amounts[v_i]], array[c_budget[v_i]])) = 0 then
      c_err[v_i] := 'KQ001';
      c_msg[v_i] := 'the budget for this period is exhausted';
    elsif c_kbudget[v_i] is not null
          and cardinality(kiln_private.debit_key_pools(array[p_key_ids[v_i]], array[c_period[v_i]], array[p_amounts[v_i]], array[c_kbudget[v_i]])) = 0 then
      update kiln_private.budget_periods set held_micros = held_micros - p_amounts[v_i]
        where pool_id = c_pool[v_i] and period_start = c_period[v_i];
      c_err[v_i] := 'KQ001';
      c_msg[v_i] := 'this key''s budget for this period is exhausted';
    end if;
  end loop;

  -- 4. The ledger: one reserved charge per request that got its reservation.
  insert into kiln_private.charges
    (id, account_id, workspace_id, pool_id, period_start, key_id, model_id, origin, reserved_micros,
     generation_id, workflow_run_id, node_id, key_pool)
  select c_id[s.i], p_account_ids[s.i], p_workspace_ids[s.i], c_pool[s.i], c_period[s.i], p_key_ids[s.i], p_model_ids[s.i],
         p_origins[s.i], p_amounts[s.i], p_generation_ids[s.i], p_run_ids[s.i], p_node_ids[s.i], c_kbudget[s.i] is not null
  from generate_subscripts(p_account_ids, 1) as s(i)
  where c_err[s.i] is null;

  return query
    select s.i::int, case when c_err[s.i] is null then c_id[s.i] end, c_err[s.i], c_msg[s.i]
    from generate_subscripts(p_account_ids, 1) as s(i)
    order by s.i;
end;
$function$;
comment on function kiln_private.reserve_budgets(uuid[],uuid[],uuid[],text[],text[],bigint[],uuid[],uuid[],text[]) is 'Reserves the worst-case cost of each request on its personal pool or, for workspace-bound calls, its Team pool, and on its key''s own budget when the key has one, in the same step, and writes its ledger row: one check-and-debit per pool and per key for the set''s total, request by request in arrival order where either cannot take it. Each row carries the charge id or the request''s own refusal: 22023 (bad amount), KN001 (no account), KQ001 (blocked tier, budget or key budget exhausted), KP001 (plan not active, caller left the workspace).';

CREATE OR REPLACE FUNCTION kiln_private.roll_up_charges(p_added kiln_private.charges[], p_removed kiln_private.charges[])
 RETURNS void
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- Each ended charge row contributes its counts to its group (an open reservation contributes
  -- nothing); a change is its new row minus its old one.
  with delta as (
    select c.pool_id, c.period_start, (c.created_at at time zone 'UTC')::date as day, c.account_id, c.workspace_id,
           c.key_id, c.model_id, c.origin, c.sign,
           (c.status = 'settled')::int as settled, (c.status = 'released')::int as released,
           coalesce(c.settled_micros, 0) as spend
    from (select a.*, 1 as sign from unnest(p_added) a
          union all
          select r.*, -1 from unnest(p_removed) r) c
    where c.status <> 'reserved'
  ), summed as (
    select pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
           sum(sign)::bigint as charges, sum(sign * settled)::bigint as settled, sum(sign * released)::bigint as released,
           sum(sign * spend)::bigint as spend
    from delta
    group by pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin
  )
  insert into kiln_private.charge_days as t
    (pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
     charges, settled_charges, released_charges, spend_micros)
  select pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
         charges, settled, released, spend
  from summed
  where charges <> 0 or settled <> 0 or released <> 0 or spend <> 0
  -- Rows locked in key order, as budgets are: concurrent writers cannot deadlock here.
  order by pool_id, day, account_id, model_id, origin, key_id, period_start
  on conflict (pool_id, day, account_id, model_id, origin, key_id, period_start) do update
    set charges = t.charges + excluded.charges,
        settled_charges = t.settled_charges + excluded.settled_charges,
        released_charges = t.released_charges + excluded.released_charges,
        spend_micros = t.spend_micros + excluded.spend_micros;
$function$;
comment on function kiln_private.roll_up_charges(kiln_private.charges[],kiln_private.charges[]) is 'Adds the contribution of the ended (settled or released) rows of p_added to kiln_private.charge_days and subtracts that of p_removed (the old versions of changed rows), one upsert per group, groups in key order. Open reservations contribute nothing.';

CREATE OR REPLACE FUNCTION kiln_private.schedule_run_deadline(p_run_id uuid, p_at timestamp with time zone)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform graphile_worker.add_job('workflow__check_deadline', json_build_object('run', p_run_id),
                                  run_at => p_at, job_key => kiln_private.workflow_job_key(p_run_id, null), max_attempts => 10);
end;
$function$;
comment on function kiln_private.schedule_run_deadline(uuid,timestamp with time zone) is 'Queues (or moves) the run-window check of a run (task workflow__check_deadline).';

CREATE OR REPLACE FUNCTION kiln_private.take_object_intent(p_location text)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- Locks the note against a concurrent sweep: whichever commits first wins.
  delete from kiln_private.object_intents where location = p_location and claimed_at is null;
  if not found then
    raise exception 'the written bytes are no longer there (swept); write them again' using errcode = 'KS002';
  end if;
end;
$function$;
comment on function kiln_private.take_object_intent(text) is 'A row is about to reference bucket key p_location: drops its note, or raises KS002 when there is no unclaimed note (a sweep took the bytes, or they were never noted).';

CREATE OR REPLACE FUNCTION kiln_private.tg_accounts__account_spend()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_start timestamptz := kiln_private.period_start(new.period_anchor, now());
begin
  -- A new account starts at 0; a moved anchor re-reads the period it now falls in.
  insert into kiln_private.account_spend (account_id, period_start, period_end, used_micros)
    values (new.id, v_start, kiln_private.period_end(new.period_anchor, v_start),
            coalesce((select b.held_micros + b.settled_micros from kiln_private.budget_periods b
                      where b.pool_id = new.id and b.period_start = v_start), 0))
    on conflict (account_id) do update
      set period_start = excluded.period_start, period_end = excluded.period_end, used_micros = excluded.used_micros;
  return null;
end;
$function$;
comment on function kiln_private.tg_accounts__account_spend() is 'Trigger: every account has its kiln_private.account_spend row from creation; a changed period anchor recomputes it.';

CREATE OR REPLACE FUNCTION kiln_private.tg_accounts__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_changes jsonb := '{}';
begin
  if tg_op = 'INSERT' then
    perform kiln_private.audit(new.id, 'account.created', 'account', new.id::text,
      jsonb_build_object('email', new.email, 'tier', new.tier, 'budgetMicros', new.budget_micros));
    return null;
  end if;
  if old.tier is distinct from new.tier then
    v_changes := v_changes || jsonb_build_object('tier', jsonb_build_object('from', old.tier, 'to', new.tier));
  end if;
  if old.budget_micros is distinct from new.budget_micros then
    v_changes := v_changes || jsonb_build_object('budgetMicros', jsonb_build_object('from', old.budget_micros, 'to', new.budget_micros));
  end if;
  if old.parallel_slots is distinct from new.parallel_slots then
    v_changes := v_changes || jsonb_build_object('parallelSlots', jsonb_build_object('from', old.parallel_slots, 'to', new.parallel_slots));
  end if;
  if old.is_admin is distinct from new.is_admin then
    v_changes := v_changes || jsonb_build_object('admin', jsonb_build_object('from', old.is_admin, 'to', new.is_admin));
  end if;
  if old.admin_by_group is distinct from new.admin_by_group then
    v_changes := v_changes || jsonb_build_object('adminByGroup', jsonb_build_object('from', old.admin_by_group, 'to', new.admin_by_group));
  end if;
  if old.email is distinct from new.email then
    v_changes := v_changes || jsonb_build_object('email', jsonb_build_object('from', old.email, 'to', new.email));
  end if;
  if v_changes <> '{}' then
    perform kiln_private.audit(new.id, 'account.updated', 'account', new.id::text, v_changes);
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_accounts__audit() is 'Trigger: account.created and account.updated (tier, budget, slots, admin, email: each change from → to) in the audit log.';

CREATE OR REPLACE FUNCTION kiln_private.tg_api_keys__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_scope uuid := coalesce(new.workspace_id, new.account_id);
  v_noun text := new.kind;
begin
  if tg_op = 'INSERT' then
    if new.kind = 'session' then
      -- A sign-in acts as the session it makes.
      perform set_config('kiln.actor', (coalesce(nullif(current_setting('kiln.actor', true), '')::jsonb, '{}')
        || jsonb_build_object('type', 'session', 'id', new.id))::text, true);
    end if;
    perform kiln_private.audit(v_scope, v_noun || '.created', v_noun, new.id::text,
      case when new.kind = 'key' then jsonb_build_object('name', new.name, 'prefix', new.display_prefix, 'scopes', new.scopes,
             'rpm', new.rpm, 'budgetMicros', new.budget_micros, 'expiresAt', new.expires_at, 'workspaceId', new.workspace_id)
           else jsonb_build_object('workspaceId', new.workspace_id, 'expiresAt', new.expires_at) end);
    return null;
  end if;
  if old.revoked_at is null and new.revoked_at is not null then
    perform kiln_private.audit(v_scope, case when new.kind = 'key' then 'key.revoked' else 'session.deleted' end, v_noun, new.id::text,
      jsonb_build_object('prefix', new.display_prefix));
  end if;
  if old.key_hash is distinct from new.key_hash then
    perform kiln_private.audit(v_scope, v_noun || '.rotated', v_noun, new.id::text,
      jsonb_build_object('prefix', new.display_prefix, 'previousPrefix', old.display_prefix,
        'previousValidUntil', (select max(g.expires_at) from kiln_private.api_key_grace g where g.key_id = new.id and g.key_hash = old.key_hash)));
  end if;
  if new.kind = 'key' and (old.scopes, old.rpm, old.budget_micros, old.expires_at, old.name, old.workspace_id)
       is distinct from (new.scopes, new.rpm, new.budget_micros, new.expires_at, new.name, new.workspace_id) then
    perform kiln_private.audit(v_scope, 'key.updated', 'key', new.id::text, jsonb_build_object(
      'scopes', new.scopes, 'rpm', new.rpm, 'budgetMicros', new.budget_micros, 'expiresAt', new.expires_at, 'name', new.name,
      'workspaceId', new.workspace_id));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_api_keys__audit() is 'Trigger: key.created / rotated / revoked / updated and session.created / deleted (sign-in and sign-out) in the audit log.';

CREATE OR REPLACE FUNCTION kiln_private.tg_audit_log__append_only()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if tg_op = 'DELETE' and current_setting('kiln.audit_purge', true) = 'on' then
    return old;
  end if;
  raise exception 'the audit log is append-only' using errcode = 'KF001';
end;
$function$;
comment on function kiln_private.tg_audit_log__append_only() is 'Trigger: refuses UPDATE, DELETE and TRUNCATE of the audit log, except the retention purge''s deletes (kiln.purge_audit_log).';

CREATE OR REPLACE FUNCTION kiln_private.tg_budget_periods__account_spend()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- The common case, on the reservation's hot path: the same period, one primary-key update.
  update kiln_private.account_spend s set used_micros = new.held_micros + new.settled_micros
    where s.account_id = new.pool_id and s.period_start = new.period_start;
  if found or tg_op = 'UPDATE' then
    -- (An update of a period the row no longer holds is a late settlement of an earlier period:
    -- a later period's figure stays.)
    return null;
  end if;
  -- A new period's first reservation. Pools that are workspaces have no row and update nothing.
  update kiln_private.account_spend s
    set used_micros = new.held_micros + new.settled_micros,
        period_start = new.period_start,
        period_end = kiln_private.period_end(a.period_anchor, new.period_start)
    from kiln_private.accounts a
    where s.account_id = new.pool_id and a.id = new.pool_id and s.period_start < new.period_start;
  return null;
end;
$function$;
comment on function kiln_private.tg_budget_periods__account_spend() is 'Trigger: an account pool''s held + settled for its latest period into kiln_private.account_spend, in the transaction of the reservation or settlement: one primary-key update; a new period''s first row (an insert) also moves the row''s period.';

CREATE OR REPLACE FUNCTION kiln_private.tg_budget_periods__thresholds()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_old bigint := case when tg_op = 'INSERT' then 0 else old.settled_micros end;
  v_budget bigint;
  v_workspace uuid;
  v_anchor timestamptz;
  v_t int;
begin
  select a.budget_micros, null::uuid, a.period_anchor into v_budget, v_workspace, v_anchor
    from kiln_private.accounts a where a.id = new.pool_id;
  if not found then
    select w.plan_budget_micros, w.id, w.plan_period_anchor into v_budget, v_workspace, v_anchor
      from kiln_private.workspaces w where w.id = new.pool_id;
  end if;
  if v_budget is null or v_budget = 0 then return null; end if;
  foreach v_t in array array[50, 80, 100] loop
    -- Crossed by this settlement: below before, at or above now (integer maths, no rounding).
    if v_old * 100 < v_budget * v_t and new.settled_micros * 100 >= v_budget * v_t then
      insert into kiln_private.budget_thresholds (pool_id, period_start, threshold)
        values (new.pool_id, new.period_start, v_t) on conflict do nothing;
      if found then
        perform kiln_private.emit_event(new.pool_id, 'budget.threshold', null, json_build_object(
          'scope', case when v_workspace is null then 'personal' else 'workspace' end,
          'workspaceId', v_workspace,
          'threshold', v_t,
          'usedMicros', new.settled_micros,
          'budgetMicros', v_budget,
          'periodStart', to_char(new.period_start at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
          'resetsAt', to_char((new.period_start + interval '1 month') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')));
      end if;
    end if;
  end loop;
  return null;
end;
$function$;
comment on function kiln_private.tg_budget_periods__thresholds() is 'Trigger: a settlement that takes a pool''s settled usage across 50, 80 or 100 % of its budget emits budget.threshold once per pool, period and threshold.';

CREATE OR REPLACE FUNCTION kiln_private.tg_charges__roll_up()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if tg_level = 'ROW' then
    -- A row inserted already ended (not the POST path, which inserts reservations).
    perform kiln_private.roll_up_charges(array[new], '{}');
  elsif tg_op = 'UPDATE' then
    -- Statement-level with transition tables: a batch of settlements is one upsert per group.
    perform kiln_private.roll_up_charges(array(select n::kiln_private.charges from new_rows n), array(select o::kiln_private.charges from old_rows o));
  elsif tg_op = 'DELETE' then
    perform kiln_private.roll_up_charges('{}', array(select o::kiln_private.charges from old_rows o));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_charges__roll_up() is 'Trigger on kiln_private.charges: keeps kiln_private.charge_days equal to the ended charges'' sums in the same transaction (kiln_private.roll_up_charges) — per statement for updates and deletes, per row for a row inserted already ended.';

CREATE OR REPLACE FUNCTION kiln_private.tg_generations__notify()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_body json := kiln_private.generation_body(new);
begin
  -- NOTIFY payloads are limited to 8000 bytes: a large result is read by its waiters instead.
  if octet_length(v_body::text) <= 7000 then
    perform pg_notify('kiln_status', json_build_object('k', 'generation', 'id', new.id, 'a', new.account_id, 's', new.status, 'b', v_body)::text);
  else
    perform pg_notify('kiln_status', json_build_object('k', 'generation', 'id', new.id, 'a', new.account_id, 's', new.status)::text);
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_generations__notify() is 'Trigger: NOTIFY kiln_status with {k: generation, id, a: account, s: status} when a generation''s status changes, plus b, the generation''s body as the API reads it (kiln_private.generation_body), when that fits in 7000 bytes: waiters and event streams then answer without reading it.';

CREATE OR REPLACE FUNCTION kiln_private.tg_generations__outbox()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform kiln_private.emit_event(coalesce(new.workspace_id, new.account_id),
    case when new.status = 'completed' then 'generation.completed' else 'generation.failed' end,
    new.id, kiln_private.generation_body(new));
  return null;
end;
$function$;
comment on function kiln_private.tg_generations__outbox() is 'Trigger: a generation that is not a workflow output reaching completed or failed (canceled included) emits generation.completed / generation.failed to its billing scope.';

CREATE OR REPLACE FUNCTION kiln_private.tg_identities__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if tg_op = 'INSERT' then
    perform kiln_private.audit(new.account_id, 'identity.linked', 'identity', left(new.issuer || ' ' || new.subject, 400),
      jsonb_build_object('issuer', new.issuer, 'subject', new.subject, 'workspaceId', new.workspace_id));
  elsif tg_op = 'DELETE' then
    perform kiln_private.audit(old.account_id, 'identity.unlinked', 'identity', left(old.issuer || ' ' || old.subject, 400),
      jsonb_build_object('issuer', old.issuer, 'subject', old.subject, 'workspaceId', old.workspace_id));
  elsif old.account_id is distinct from new.account_id then
    -- Re-linked to another account: it stops acting as the one and starts acting as the other,
    -- each in its own account's log.
    perform kiln_private.audit(old.account_id, 'identity.unlinked', 'identity', left(old.issuer || ' ' || old.subject, 400),
      jsonb_build_object('issuer', old.issuer, 'subject', old.subject, 'workspaceId', old.workspace_id, 'relinkedTo', new.account_id));
    perform kiln_private.audit(new.account_id, 'identity.linked', 'identity', left(new.issuer || ' ' || new.subject, 400),
      jsonb_build_object('issuer', new.issuer, 'subject', new.subject, 'workspaceId', new.workspace_id, 'previousAccountId', old.account_id));
  elsif old.workspace_id is distinct from new.workspace_id then
    -- Re-linked to the same account with another Team workspace to bill (or none).
    perform kiln_private.audit(new.account_id, 'identity.linked', 'identity', left(new.issuer || ' ' || new.subject, 400),
      jsonb_build_object('issuer', new.issuer, 'subject', new.subject, 'workspaceId', new.workspace_id, 'previousWorkspaceId', old.workspace_id));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_identities__audit() is 'Trigger: identity.linked (a new link, or a re-link to another account or billing workspace) and identity.unlinked (removed, or moved to another account) in the audit log, in the account''s scope, with the issuer, subject and billing workspace (never a token).';

CREATE OR REPLACE FUNCTION kiln_private.tg_models__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_old jsonb;
  v_new jsonb;
  v_changed jsonb;
begin
  if tg_op = 'INSERT' then
    perform kiln_private.audit(null, 'model.created', 'model', new.id, jsonb_build_object('enabled', new.enabled, 'provider', new.provider));
    return null;
  elsif tg_op = 'DELETE' then
    perform kiln_private.audit(null, 'model.deleted', 'model', old.id, '{}');
    return null;
  end if;
  v_old := to_jsonb(old) - 'updated_at' - 'created_at';
  v_new := to_jsonb(new) - 'updated_at' - 'created_at';
  if v_old = v_new then
    return null;  -- a catalog import that changed nothing
  end if;
  select coalesce(jsonb_object_agg(n.key, jsonb_build_object('from', v_old->n.key, 'to', n.value)), '{}')
    into v_changed from jsonb_each(v_new) n where v_old->n.key is distinct from n.value;
  perform kiln_private.audit(null,
    case when old.enabled and not new.enabled then 'model.disabled' when new.enabled and not old.enabled then 'model.enabled' else 'model.updated' end,
    'model', new.id, v_changed);
  return null;
end;
$function$;
comment on function kiln_private.tg_models__audit() is 'Trigger: model.created / updated / enabled / disabled / deleted in the audit log (service-wide, scope null), with each changed field from → to; a write that changes nothing is not recorded.';

CREATE OR REPLACE FUNCTION kiln_private.tg_webhook_endpoints__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if tg_op = 'INSERT' then
    perform kiln_private.audit(new.scope_id, 'webhook.created', 'webhook', new.id::text,
      jsonb_build_object('url', new.url, 'events', new.events, 'description', new.description));
  elsif tg_op = 'DELETE' then
    perform kiln_private.audit(old.scope_id, 'webhook.deleted', 'webhook', old.id::text, jsonb_build_object('url', old.url));
  else
    if old.secret_enc is distinct from new.secret_enc then
      perform kiln_private.audit(new.scope_id, 'webhook.secret_rotated', 'webhook', new.id::text,
        jsonb_build_object('previousValidUntil', new.old_secret_until));
    end if;
    -- A disable by the delivery system (disabled_reason set) is the webhook's health, not a change by a person.
    if (old.url, old.events, old.description) is distinct from (new.url, new.events, new.description)
       or (old.enabled is distinct from new.enabled and new.disabled_reason is null) then
      perform kiln_private.audit(new.scope_id, 'webhook.updated', 'webhook', new.id::text,
        jsonb_build_object('url', new.url, 'events', new.events, 'description', new.description, 'enabled', new.enabled));
    end if;
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_webhook_endpoints__audit() is 'Trigger: webhook.created / updated / deleted / secret_rotated in the audit log (never the secret; an automatic disable is not an update).';

CREATE OR REPLACE FUNCTION kiln_private.tg_workflow_runs__notify()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_run_id uuid;
begin
  -- One payload per run for both tables, without a status: identical payloads of one transaction
  -- are delivered once, so settling an output (its row, the run's counters, maybe the run's
  -- status) wakes each waiter once.
  if tg_table_name = 'workflow_runs' then
    v_run_id := new.id;
  else
    v_run_id := new.run_id;
  end if;
  perform pg_notify('kiln_status', json_build_object('k', 'run', 'id', v_run_id, 'a', new.account_id)::text);
  return null;
end;
$function$;
comment on function kiln_private.tg_workflow_runs__notify() is 'Trigger on workflow_runs and workflow_run_outputs: NOTIFY kiln_status with {k: run, id: run id, a: account} when a run''s status or counters change or an output settles.';

CREATE OR REPLACE FUNCTION kiln_private.tg_workflow_runs__outbox()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- Deferred to the end of the transaction: the run's body then includes every change the
  -- transaction made after the status (counters, the output that failed it).
  perform kiln_private.emit_event(coalesce(new.workspace_id, new.account_id),
    case when new.status = 'completed' then 'workflow_run.completed' else 'workflow_run.failed' end,
    new.id, kiln.get_workflow_run(new.account_id, new.workflow_id, new.id));
  return null;
end;
$function$;
comment on function kiln_private.tg_workflow_runs__outbox() is 'Trigger (deferred to commit): a run reaching completed or failed emits workflow_run.completed / workflow_run.failed (data = the run as GET …/runs/{runId} reads it at the end of the transaction) to its billing scope.';

CREATE OR REPLACE FUNCTION kiln_private.tg_workflows__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if new.deleted_at is not null then
    if tg_op = 'UPDATE' and old.deleted_at is null then
      perform kiln_private.audit(new.scope_id, 'workflow.deleted', 'workflow', new.id::text,
        jsonb_build_object('name', new.name, 'version', new.version));
    end if;
  elsif tg_op = 'INSERT' or old.version is distinct from new.version then
    perform kiln_private.audit(new.scope_id, 'workflow.saved', 'workflow', new.id::text,
      jsonb_build_object('name', new.name, 'version', new.version));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_workflows__audit() is 'Trigger: workflow.saved (create or replace: a new version) and workflow.deleted in the audit log.';

CREATE OR REPLACE FUNCTION kiln_private.tg_workflows__outbox()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if new.deleted_at is not null then
    if tg_op = 'UPDATE' and old.deleted_at is null then
      perform kiln_private.emit_event(new.scope_id, 'workflow.deleted', new.id, kiln_private.workflow_event_data(new));
    end if;
  elsif tg_op = 'INSERT' or new.version is distinct from old.version then
    perform kiln_private.emit_event(new.scope_id, 'workflow.saved', new.id, kiln_private.workflow_event_data(new));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_workflows__outbox() is 'Trigger: a save (insert, or a new version) emits workflow.saved, a delete workflow.deleted, to the workflow''s scope; a run''s write-back (graph only) emits nothing.';

CREATE OR REPLACE FUNCTION kiln_private.tg_workspace_members__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if tg_op = 'INSERT' or (old.left_at is not null and new.left_at is null) then
    perform kiln_private.audit(new.workspace_id, 'workspace.member_added', 'account', new.account_id::text,
      jsonb_build_object('role', new.role));
  elsif old.left_at is null and new.left_at is not null then
    perform kiln_private.audit(new.workspace_id, 'workspace.member_removed', 'account', new.account_id::text,
      jsonb_build_object('role', old.role));
  elsif old.role is distinct from new.role then
    perform kiln_private.audit(new.workspace_id, 'workspace.member_updated', 'account', new.account_id::text,
      jsonb_build_object('role', jsonb_build_object('from', old.role, 'to', new.role)));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_workspace_members__audit() is 'Trigger: workspace.member_added / member_removed / member_updated (role) in the audit log, in the workspace''s scope.';

CREATE OR REPLACE FUNCTION kiln_private.tg_workspaces__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if tg_op = 'INSERT' then
    perform kiln_private.audit(new.id, 'workspace.created', 'workspace', new.id::text,
      jsonb_build_object('name', new.name, 'ownerId', new.owner_id));
  elsif (old.plan_status, old.plan_budget_micros, old.name) is distinct from (new.plan_status, new.plan_budget_micros, new.name) then
    perform kiln_private.audit(new.id, 'workspace.updated', 'workspace', new.id::text, jsonb_build_object(
      'name', new.name, 'planStatus', jsonb_build_object('from', old.plan_status, 'to', new.plan_status),
      'budgetMicros', jsonb_build_object('from', old.plan_budget_micros, 'to', new.plan_budget_micros)));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_workspaces__audit() is 'Trigger: workspace.created and workspace.updated (plan status, budget, name) in the audit log.';

CREATE OR REPLACE FUNCTION kiln_private.touch_keys(p_ids uuid[], p_at timestamp with time zone)
 RETURNS void
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  update kiln_private.api_keys k set last_used_at = p_at
  where k.id in (select x.id from kiln_private.api_keys x
                 where x.id = any (p_ids) and (x.last_used_at is null or x.last_used_at < p_at - interval '1 minute')
                 for no key update skip locked);
$function$;
comment on function kiln_private.touch_keys(uuid[],timestamp with time zone) is 'Records the keys'' last use when the stored one is over a minute old: at most one write per key a minute, and never a wait (rows another transaction holds are skipped).';

CREATE OR REPLACE FUNCTION kiln_private.trim_upstream_minutes()
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  delete from kiln_private.upstream_minutes where minute < now() - interval '1 hour';
$function$;
comment on function kiln_private.trim_upstream_minutes() is 'Drops per-minute upstream counts older than an hour (run by the workers'' full sweep).';

CREATE OR REPLACE FUNCTION kiln_private.unfinishable_message(p_id uuid)
 RETURNS text
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select case when g.run_id is null
    then format('no worker can finish this generation: its job left the queue (removed, or out of retries%s). Nothing was charged; create the generation again.',
                case when g.crashes > 0 then format(' after its worker stopped %s times', g.crashes) else '' end)
    else format('no worker can finish this output: its job left the queue (removed, or out of retries%s). Nothing was charged; retry the run.',
                case when g.crashes > 0 then format(' after its worker stopped %s times', g.crashes) else '' end)
  end
  from kiln_private.generations g where g.id = p_id;
$function$;
comment on function kiln_private.unfinishable_message(uuid) is 'The error of a generation that no job can finish any more (the sweep and the run-window check fail it): what happened and what to do.';

CREATE OR REPLACE FUNCTION kiln_private.unlock_silent_pools(p_stale_seconds integer)
 RETURNS text[]
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_stale interval := make_interval(secs => p_stale_seconds);
  v_dead text[];
begin
  -- Pools holding job locks older than the stale window whose worker is not alive: one that never
  -- registered, or one from before leases that stopped heartbeating. A pool locks a job queue only
  -- together with a job of that queue and lets go of both together, so its job locks (the
  -- graphile_worker.jobs view) find it; force_unlock_workers frees its queue locks as well.
  select coalesce(array_agg(distinct j.locked_by), array[]::text[]) into v_dead
    from graphile_worker.jobs j
    where j.locked_by is not null and j.locked_at < now() - v_stale
      and not kiln_private.worker_alive(j.locked_by, p_stale_seconds);
  if cardinality(v_dead) > 0 then
    perform graphile_worker.force_unlock_workers(v_dead);
    perform pg_notify('jobs:insert', json_build_object('r', random(), 'count', cardinality(v_dead))::text);
  end if;
  delete from kiln_private.worker_heartbeats h where h.lease_key is null and h.last_seen < now() - v_stale;
  return v_dead;
end;
$function$;
comment on function kiln_private.unlock_silent_pools(integer) is 'The full sweep''s part of crash recovery: unlocks (graphile_worker.force_unlock_workers) the jobs of pools that hold locks older than the stale window and are not alive (never registered, or pre-lease workers without a recent heartbeat).';

CREATE OR REPLACE FUNCTION kiln_private.usage_rows(p_account_id uuid, p_workspace_id uuid, p_key_id uuid)
 RETURNS TABLE(usage json)
 LANGUAGE sql
 STABLE
AS $function$
  select json_build_object(
    'tier', acct.tier,
    'token_budget_micros', acct.budget_micros,
    'used_micros', coalesce(bp.held_micros + bp.settled_micros, 0),
    'remaining_micros', case when acct.budget_micros is not null
                             then greatest(acct.budget_micros - coalesce(bp.held_micros + bp.settled_micros, 0), 0) end,
    'resets_at', case when acct.budget_micros is not null
                      then to_char((acct.period + interval '1 month') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') end,
    'scope', case when p_workspace_id is null then 'personal' else 'workspace' end,
    'workspace_id', p_workspace_id,
    'workspace_budget_micros', ws.plan_budget_micros,
    'workspace_used_micros', case when ws.id is not null then coalesce(wbp.held_micros + wbp.settled_micros, 0) end,
    'workspace_remaining_micros', case when ws.plan_budget_micros is not null
                                       then greatest(ws.plan_budget_micros - coalesce(wbp.held_micros + wbp.settled_micros, 0), 0) end,
    'workspace_resets_at', case when ws.id is not null
                                then to_char((ws.period + interval '1 month') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') end,
    'key_budget_micros', k.budget_micros,
    'key_used_micros', case when k.budget_micros is not null then coalesce(kb.held_micros + kb.settled_micros, 0) end,
    'key_remaining_micros', case when k.budget_micros is not null then greatest(k.budget_micros - coalesce(kb.held_micros + kb.settled_micros, 0), 0) end)
  from (select a.id, a.tier, a.budget_micros, kiln_private.period_start(a.period_anchor, now()) as period
        from kiln_private.accounts a where a.id = p_account_id) acct
  left join kiln_private.budget_periods bp on bp.pool_id = acct.id and bp.period_start = acct.period
  left join (select w.id, w.plan_budget_micros, kiln_private.period_start(w.plan_period_anchor, now()) as period
             from kiln_private.workspaces w
             where w.id = p_workspace_id and w.plan_status = 'active'
               and exists (select 1 from kiln_private.workspace_members m
                           where m.workspace_id = w.id and m.account_id = p_account_id and m.left_at is null)) ws on true
  left join kiln_private.budget_periods wbp on wbp.pool_id = ws.id and wbp.period_start = ws.period
  left join kiln_private.api_keys k on k.id = p_key_id
  -- A personal key's period is its account's, computed above; a workspace key's, its workspace's.
  left join kiln_private.key_budget_periods kb
    on kb.key_id = k.id
   and kb.period_start = case when k.workspace_id is null and k.account_id = acct.id then acct.period
                              else kiln_private.key_period(k.account_id, k.workspace_id) end;
$function$;
comment on function kiln_private.usage_rows(uuid,uuid,uuid) is 'The GET /usage body as one row (none when the account does not exist), with the calling key''s own budget (key_budget_micros, key_used_micros, key_remaining_micros; null when the key has none); inlined by the planner into callers.';

CREATE OR REPLACE FUNCTION kiln_private.uuid_v7(p_at timestamp with time zone DEFAULT clock_timestamp())
 RETURNS uuid
 LANGUAGE sql
 PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- RFC 9562 version 7: 48 bits of Unix milliseconds, then gen_random_uuid()'s random bits with
  -- the version nibble turned from 4 into 7 (bits 52 and 53 set); the variant bits stay as they are.
  select encode(set_bit(set_bit(
           overlay(uuid_send(gen_random_uuid())
                   placing substring(int8send(floor(extract(epoch from p_at) * 1000)::bigint) from 3)
                   from 1 for 6),
           52, 1), 53, 1), 'hex')::uuid;
$function$;
comment on function kiln_private.uuid_v7(timestamp with time zone) is 'A version 7 UUID (RFC 9562) for the time p_at (now by default): ordered by time to the millisecond, random after that. Used for ledger ids, so the primary key is appended to at its right end. (Postgres 18''s uuidv7() does the same; this works on older servers too.)';

CREATE OR REPLACE FUNCTION kiln_private.uuid_v7_ordered(p_at timestamp with time zone DEFAULT clock_timestamp())
 RETURNS uuid
 LANGUAGE sql
 PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- RFC 9562 version 7, method 3 of §6.2: 48 bits of Unix milliseconds, the version (7), then the
  -- sub-millisecond fraction in the 12 bits of rand_a (microseconds × 4096 / 1000), then
  -- gen_random_uuid()'s random bits and variant.
  select encode(
    overlay(
      overlay(uuid_send(gen_random_uuid())
              placing substring(int8send(floor(extract(epoch from p_at) * 1000)::bigint) from 3)
              from 1 for 6)
      placing int2send((28672 + ((floor(extract(epoch from p_at) * 1000000)::bigint % 1000) * 4096 / 1000))::int::smallint)
      from 7 for 2),
    'hex')::uuid;
$function$;
comment on function kiln_private.uuid_v7_ordered(timestamp with time zone) is 'A version 7 UUID whose 12 bits after the version hold the sub-millisecond time (RFC 9562 §6.2, method 3): ids made one after another sort in that order, to the microsecond.';

CREATE OR REPLACE FUNCTION kiln_private.visible_key(p_account_id uuid, p_workspace_id uuid, p_key_id uuid)
 RETURNS kiln_private.api_keys
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- Personal scope: the caller's own personal keys. A workspace: its keys; all of them for an
  -- owner or admin, a member's own otherwise. Sessions are never keys.
  select k.* from kiln_private.api_keys k
  where k.id = p_key_id and k.kind = 'key'
    and case when p_workspace_id is null then k.account_id = p_account_id and k.workspace_id is null
             else k.workspace_id = p_workspace_id and (k.account_id = p_account_id or exists (
               select 1 from kiln_private.workspace_members m
               where m.workspace_id = p_workspace_id and m.account_id = p_account_id and m.left_at is null
                 and m.role in ('owner', 'admin'))) end;
$function$;
comment on function kiln_private.visible_key(uuid,uuid,uuid) is 'The key with this id when the caller''s billing scope may manage it (else no row: a 404, never a hint).';

CREATE OR REPLACE FUNCTION kiln_private.webhook_endpoint_json(e kiln_private.webhook_endpoints)
 RETURNS json
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'id', e.id, 'url', e.url, 'events', e.events, 'description', e.description,
    'enabled', e.enabled, 'disabledReason', e.disabled_reason,
    'createdAt', to_char(e.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
$function$;
comment on function kiln_private.webhook_endpoint_json(kiln_private.webhook_endpoints) is 'An endpoint as the API shows it (never a secret).';

CREATE OR REPLACE FUNCTION kiln_private.webhook_job(p_delivery_id uuid, p_endpoint_id uuid, p_round integer, p_try integer, p_run_at timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS graphile_worker.job_spec
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- A queue per endpoint runs its deliveries one at a time, so a hanging receiver holds one
  -- worker slot. The task reads d, r and n (tasks/webhook__deliver.ts).
  select row('webhook__deliver', json_build_object('d', p_delivery_id, 'r', p_round, 'n', p_try),
             'kiln-webhook:' || p_endpoint_id, p_run_at, 25, null, null, null)::graphile_worker.job_spec;
$function$;
comment on function kiln_private.webhook_job(uuid,uuid,integer,integer,timestamp with time zone) is 'The webhook__deliver job of one try of a delivery (round p_round, try p_try), on its endpoint''s queue, at p_run_at (now when null): the job''s settings in one place, for graphile_worker.add_jobs.';

CREATE OR REPLACE FUNCTION kiln_private.worker_alive(p_worker_id text, p_stale_seconds integer)
 RETURNS boolean
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select coalesce((
    select case when h.lease_key is not null then kiln_private.lease_key_held(h.lease_key)
                else h.last_seen >= now() - make_interval(secs => p_stale_seconds) end
    from kiln_private.worker_heartbeats h
    where h.worker_id = p_worker_id or h.pool_id = p_worker_id
    limit 1), false);
$function$;
comment on function kiln_private.worker_alive(text,integer) is 'Whether a worker (its lease id, or its graphile-worker pool id) is alive: its session still holds its lease lock (workers without a lease: a heartbeat within the stale window). Unknown workers are not alive.';

CREATE OR REPLACE FUNCTION kiln_private.workflow_event_data(w kiln_private.workflows)
 RETURNS json
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'id', w.id, 'name', w.name, 'version', w.version,
    'createdAt', to_char(w.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'updatedAt', to_char(w.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'deletedAt', to_char(w.deleted_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
$function$;
comment on function kiln_private.workflow_event_data(kiln_private.workflows) is 'The data of a workflow.saved / workflow.deleted event: the workflow without its graph (id, name, version, createdAt, updatedAt, deletedAt).';

CREATE OR REPLACE FUNCTION kiln_private.workflow_job_key(p_run_id uuid, p_output_id text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  -- Output ids are user strings: the ':o:' marker keeps them apart from the run's deadline key.
  select case when p_output_id is null then 'workflow:' || p_run_id || ':deadline'
              else 'workflow:' || p_run_id || ':o:' || p_output_id end;
$function$;
comment on function kiln_private.workflow_job_key(uuid,text) is 'graphile-worker job key of a run output (or, for a null output, of the run''s deadline check).';

CREATE OR REPLACE FUNCTION kiln_private.workflow_scope(p_account_id uuid, p_workspace_id uuid)
 RETURNS uuid
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select case
    when p_workspace_id is null then p_account_id
    when exists (select 1 from kiln_private.workspace_members m
                 where m.workspace_id = p_workspace_id and m.account_id = p_account_id and m.left_at is null) then p_workspace_id
  end;
$function$;
comment on function kiln_private.workflow_scope(uuid,uuid) is 'The scope whose workflows a caller reaches: the workspace of a workspace-bound key or identity while its account is a member, the account for a personal one; null (no workflow at all) for a member who left.';

CREATE OR REPLACE FUNCTION kiln_private.workflow_scopes(p_account_id uuid, p_workspace_id uuid)
 RETURNS uuid[]
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select array_remove(array[kiln_private.workflow_scope(p_account_id, p_workspace_id),
                            case when p_workspace_id is not null then p_account_id end], null);
$function$;
comment on function kiln_private.workflow_scopes(uuid,uuid) is 'The scopes whose workflows a caller reaches: its own (kiln_private.workflow_scope) and, for a workspace-bound key or identity, its account''s personal ones (as before workflows had scopes); empty for nobody.';

CREATE OR REPLACE FUNCTION kiln_private.write_back_workflow_run(p_run_id uuid)
 RETURNS void
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  with done as (
    select o.output_node_id, jsonb_strip_nulls(jsonb_build_object(
             'type', o.type,
             'path', o.result->>'path',
             'mediaType', o.result->>'mediaType',
             'code', o.result->>'code',
             'costMicros', o.cost_micros,
             'runId', o.run_id,
             'completedAt', to_char(o.finished_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))) as result
    from kiln_private.workflow_run_outputs o
    where o.run_id = p_run_id and o.status = 'completed'
  )
  -- Not a save: version stays (docs/api.md, "Versions and If-Match") and no workflow.saved is
  -- emitted; workflow_run.completed announces the results.
  update kiln_private.workflows w
    set graph = jsonb_set(w.graph, '{nodes}', (
          select jsonb_agg(case when d.result is not null then e.n || jsonb_build_object('result', d.result) else e.n end order by e.i)
          from jsonb_array_elements(w.graph->'nodes') with ordinality as e(n, i)
          left join done d on e.n->>'kind' = 'output' and d.output_node_id = e.n->>'id')),
        updated_at = now()
    from kiln_private.workflow_runs r
    where r.id = p_run_id and w.id = r.workflow_id and w.deleted_at is null
      and jsonb_typeof(w.graph->'nodes') = 'array'
      -- Only output nodes that still exist in the saved graph receive a result.
      and exists (select 1 from jsonb_array_elements(w.graph->'nodes') n join done d
                  on n->>'kind' = 'output' and d.output_node_id = n->>'id');
$function$;
comment on function kiln_private.write_back_workflow_run(uuid) is 'Writes a completed run''s outputs onto the saved workflow''s output nodes that still exist (an update: bumps updated_at, not version — a client''s If-Match for its own edit still holds; deleted workflows are left alone).';
