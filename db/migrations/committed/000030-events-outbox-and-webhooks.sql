--! Previous: sha1:cff243760560177b5a742796e69e85c9569c6be7
--! Hash: sha1:699e0104cc551b034ed55924b5e1b7fbb99d29d8
--! Message: An events outbox, webhook endpoints and deliveries

--! split: 1-current.sql
-- Events and webhooks (issue 20): an outbox of events written in the transaction of the state
-- change they report (triggers on generations, workflow runs and budget periods), webhook
-- endpoints per billing scope, one delivery per (event, matching endpoint) written in that same
-- transaction and delivered by graphile-worker jobs (task webhook__deliver), an attempt log,
-- and the read that GET /events resumes from. Re-runnable.

-- ------------------------------------------------------------------ tables

create table if not exists kiln_private.webhook_endpoints (
  id uuid primary key default gen_random_uuid(),
  -- The billing scope: the account for a personal endpoint, the workspace for a workspace one.
  scope_id uuid not null,
  account_id uuid not null references kiln_private.accounts (id),
  workspace_id uuid references kiln_private.workspaces (id),
  url text not null check (length(url) between 1 and 2048),
  -- null = every event type.
  events text[],
  description text check (length(description) <= 500),
  enabled boolean not null default true,
  disabled_reason text,
  -- AES-256-GCM (iv ‖ tag ‖ ciphertext) of the 32 secret bytes; the service holds the key.
  secret_enc bytea not null,
  old_secret_enc bytea,
  old_secret_until timestamptz,
  -- Set by the first failed attempt after a success; an endpoint failing for 5 days is disabled.
  failing_since timestamptz,
  last_success_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check (scope_id = coalesce(workspace_id, account_id))
);
comment on table kiln_private.webhook_endpoints is 'Webhook endpoints of a billing scope (an account, or a workspace): URL, event filter, encrypted signing secret(s), enabled state.';
create index if not exists webhook_endpoints_scope_idx on kiln_private.webhook_endpoints (scope_id, created_at);

create table if not exists kiln_private.events (
  id bigint generated always as identity primary key,
  -- The writing transaction: GET /events streams only events of transactions that have ended
  -- (tx < the snapshot's xmin), in (tx, id) order, so a later commit can never land behind a
  -- client's Last-Event-ID.
  tx xid8 not null default pg_current_xact_id(),
  scope_id uuid not null,
  type text not null,
  subject_id uuid,
  occurred_at timestamptz not null default clock_timestamp(),
  -- The state as SQL reads it (a generation's or run's stored body; budget and test data as sent).
  data json not null,
  -- The message body as first rendered (image URLs signed then), kept so every delivery and
  -- every stream sends the same bytes.
  body text
);
comment on table kiln_private.events is 'The outbox: one row per event a client may care about, written in the transaction of the change it reports.';
create index if not exists events_scope_tx_idx on kiln_private.events (scope_id, tx, id);
create index if not exists events_occurred_idx on kiln_private.events using brin (occurred_at);

create table if not exists kiln_private.webhook_deliveries (
  id uuid primary key default gen_random_uuid(),
  endpoint_id uuid not null references kiln_private.webhook_endpoints (id) on delete cascade,
  event_id bigint not null references kiln_private.events (id),
  status text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
  attempts integer not null default 0,
  -- Attempts in the current round (a redeliver or recover starts a new round on the schedule).
  tries integer not null default 0,
  round integer not null default 0,
  last_status_code integer,
  last_error text,
  created_at timestamptz not null default clock_timestamp(),
  delivered_at timestamptz,
  failed_at timestamptz,
  next_attempt_at timestamptz default clock_timestamp()
);
comment on table kiln_private.webhook_deliveries is 'One message per (event, endpoint): its id is the webhook-id; status, attempts and the next attempt.';
create index if not exists webhook_deliveries_endpoint_idx on kiln_private.webhook_deliveries (endpoint_id, created_at desc, id desc);
create index if not exists webhook_deliveries_failed_idx on kiln_private.webhook_deliveries (endpoint_id, failed_at) where status = 'failed';

create table if not exists kiln_private.webhook_attempts (
  delivery_id uuid not null references kiln_private.webhook_deliveries (id) on delete cascade,
  at timestamptz not null default clock_timestamp(),
  status_code integer,
  duration_ms integer not null,
  -- timeout, refused, tls, redirect, status (never a response body).
  error_class text check (error_class in ('timeout', 'refused', 'tls', 'redirect', 'status'))
);
comment on table kiln_private.webhook_attempts is 'The attempt log: status code, duration and error class of every delivery attempt. Never a response body.';
create index if not exists webhook_attempts_delivery_idx on kiln_private.webhook_attempts (delivery_id, at);

create table if not exists kiln_private.budget_thresholds (
  pool_id uuid not null,
  period_start timestamptz not null,
  threshold integer not null check (threshold in (50, 80, 100)),
  fired_at timestamptz not null default now(),
  primary key (pool_id, period_start, threshold)
);
comment on table kiln_private.budget_thresholds is 'Budget thresholds already announced (budget.threshold), once per pool, period and threshold.';

-- ------------------------------------------------------------------ emitting

create or replace function kiln_private.emit_event(p_scope_id uuid, p_type text, p_subject_id uuid, p_data json, p_endpoint_id uuid default null)
returns bigint
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_id bigint;
  v_jobs graphile_worker.job_spec[];
begin
  insert into kiln_private.events (scope_id, type, subject_id, data)
    values (p_scope_id, p_type, p_subject_id, p_data)
    returning id into v_id;
  -- One delivery and one job per matching endpoint, in this transaction: never lost. A queue per
  -- endpoint runs its deliveries one at a time, so a hanging receiver holds one worker slot.
  with d as (
    insert into kiln_private.webhook_deliveries (endpoint_id, event_id)
    select e.id, v_id from kiln_private.webhook_endpoints e
    where e.scope_id = p_scope_id and e.enabled
      and (p_endpoint_id is null or e.id = p_endpoint_id)
      and (e.events is null or p_type = any (e.events))
    returning id, endpoint_id)
  select array_agg(row('webhook__deliver', json_build_object('d', d.id, 'r', 0, 'n', 0), 'kiln-webhook:' || d.endpoint_id,
                       null, 25, null, null, null)::graphile_worker.job_spec)
    into v_jobs from d;
  if v_jobs is not null then
    perform graphile_worker.add_jobs(v_jobs);
  end if;
  -- GET /events streams wake up and read the table.
  perform pg_notify('kiln_status', json_build_object('k', 'events', 'id', p_scope_id)::text);
  return v_id;
end;
$$;
comment on function kiln_private.emit_event(uuid, text, uuid, json, uuid) is 'Writes one event to the outbox and, in the same transaction, a delivery plus a webhook__deliver job for each enabled endpoint of the scope whose filter matches (only p_endpoint_id when given); notifies GET /events streams. Returns the event id.';

create or replace function kiln_private.tg_generations__outbox()
returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  perform kiln_private.emit_event(coalesce(new.workspace_id, new.account_id),
    case when new.status = 'completed' then 'generation.completed' else 'generation.failed' end,
    new.id, kiln_private.generation_body(new));
  return null;
end;
$$;
comment on function kiln_private.tg_generations__outbox() is 'Trigger: a generation that is not a workflow output reaching completed or failed (canceled included) emits generation.completed / generation.failed to its billing scope.';
drop trigger if exists tg_generations__outbox on kiln_private.generations;
create trigger tg_generations__outbox after update of status on kiln_private.generations
  for each row when (old.status is distinct from new.status and new.status in ('completed', 'failed') and new.run_id is null)
  execute function kiln_private.tg_generations__outbox();

create or replace function kiln_private.tg_workflow_runs__outbox()
returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  -- Deferred to the end of the transaction: the run's body then includes every change the
  -- transaction made after the status (counters, the output that failed it).
  perform kiln_private.emit_event(coalesce(new.workspace_id, new.account_id),
    case when new.status = 'completed' then 'workflow_run.completed' else 'workflow_run.failed' end,
    new.id, kiln.get_workflow_run(new.account_id, new.workflow_id, new.id));
  return null;
end;
$$;
comment on function kiln_private.tg_workflow_runs__outbox() is 'Trigger (deferred to commit): a run reaching completed or failed emits workflow_run.completed / workflow_run.failed (data = the run as GET …/runs/{runId} reads it at the end of the transaction) to its billing scope.';
drop trigger if exists tg_workflow_runs__outbox on kiln_private.workflow_runs;
create constraint trigger tg_workflow_runs__outbox after update of status on kiln_private.workflow_runs
  deferrable initially deferred
  for each row when (old.status is distinct from new.status and new.status in ('completed', 'failed'))
  execute function kiln_private.tg_workflow_runs__outbox();

create or replace function kiln_private.tg_budget_periods__thresholds()
returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln_private.tg_budget_periods__thresholds() is 'Trigger: a settlement that takes a pool''s settled usage across 50, 80 or 100 % of its budget emits budget.threshold once per pool, period and threshold.';
drop trigger if exists tg_budget_periods__thresholds on kiln_private.budget_periods;
create trigger tg_budget_periods__thresholds after insert or update of settled_micros on kiln_private.budget_periods
  for each row when (new.settled_micros > 0)
  execute function kiln_private.tg_budget_periods__thresholds();

-- ------------------------------------------------------------------ endpoints

create or replace function kiln_private.webhook_endpoint_json(e kiln_private.webhook_endpoints)
returns json
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  select json_build_object(
    'id', e.id, 'url', e.url, 'events', e.events, 'description', e.description,
    'enabled', e.enabled, 'disabledReason', e.disabled_reason,
    'createdAt', to_char(e.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
$$;
comment on function kiln_private.webhook_endpoint_json(kiln_private.webhook_endpoints) is 'An endpoint as the API shows it (never a secret).';

create or replace function kiln.create_webhook_endpoint(p_account_id uuid, p_workspace_id uuid, p_url text, p_events text[], p_description text, p_secret_enc bytea)
returns json
language sql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
  insert into kiln_private.webhook_endpoints (scope_id, account_id, workspace_id, url, events, description, secret_enc)
    values (coalesce(p_workspace_id, p_account_id), p_account_id, p_workspace_id, p_url, p_events, p_description, p_secret_enc)
    returning kiln_private.webhook_endpoint_json(webhook_endpoints);
$$;
comment on function kiln.create_webhook_endpoint(uuid, uuid, text, text[], text, bytea) is 'Creates an endpoint in the scope of the creating key (the workspace when bound, else the account). Returns it (no secret).';

create or replace function kiln.list_webhook_endpoints(p_scope_id uuid)
returns json
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select coalesce(json_agg(kiln_private.webhook_endpoint_json(e) order by e.created_at, e.id), '[]')
  from kiln_private.webhook_endpoints e where e.scope_id = p_scope_id;
$$;
comment on function kiln.list_webhook_endpoints(uuid) is 'Every endpoint of a scope, oldest first (no secrets).';

create or replace function kiln.get_webhook_endpoint(p_scope_id uuid, p_id uuid)
returns json
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select kiln_private.webhook_endpoint_json(e) from kiln_private.webhook_endpoints e where e.id = p_id and e.scope_id = p_scope_id;
$$;
comment on function kiln.get_webhook_endpoint(uuid, uuid) is 'One endpoint of the scope (no secret); null when absent or another scope''s.';

create or replace function kiln.update_webhook_endpoint(p_scope_id uuid, p_id uuid, p_patch jsonb)
returns json
language sql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln.update_webhook_endpoint(uuid, uuid, jsonb) is 'Applies a PATCH (url, events — null = all —, description, enabled) to an endpoint of the scope; null when absent.';

create or replace function kiln.delete_webhook_endpoint(p_scope_id uuid, p_id uuid)
returns boolean
language sql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
  with d as (delete from kiln_private.webhook_endpoints where id = p_id and scope_id = p_scope_id returning 1)
  select exists (select 1 from d);
$$;
comment on function kiln.delete_webhook_endpoint(uuid, uuid) is 'Deletes an endpoint of the scope with its delivery log (queued jobs find nothing and end). Whether it existed.';

create or replace function kiln.rotate_webhook_secret(p_scope_id uuid, p_id uuid, p_secret_enc bytea, p_overlap_seconds integer)
returns boolean
language sql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
  with u as (
    update kiln_private.webhook_endpoints set
      old_secret_enc = secret_enc, old_secret_until = now() + make_interval(secs => p_overlap_seconds),
      secret_enc = p_secret_enc, updated_at = now()
    where id = p_id and scope_id = p_scope_id returning 1)
  select exists (select 1 from u);
$$;
comment on function kiln.rotate_webhook_secret(uuid, uuid, bytea, integer) is 'A new signing secret; the previous one keeps signing alongside it for p_overlap_seconds. Whether the endpoint exists.';

-- ------------------------------------------------------------------ deliveries (API)

create or replace function kiln.list_webhook_deliveries(p_scope_id uuid, p_endpoint_id uuid, p_limit integer, p_before_at timestamptz, p_before_id uuid)
returns json
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select case when not exists (select 1 from kiln_private.webhook_endpoints e where e.id = p_endpoint_id and e.scope_id = p_scope_id) then null
  else (select coalesce(json_agg(json_build_object(
      'id', d.id, 'event', ev.type, 'status', d.status, 'attempts', d.attempts,
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
$$;
comment on function kiln.list_webhook_deliveries(uuid, uuid, integer, timestamptz, uuid) is 'A page of an endpoint''s deliveries, newest first, before a (created_at, id) cursor; null when the endpoint is not the scope''s.';

create or replace function kiln_private.queue_delivery(p_id uuid)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v record;
begin
  update kiln_private.webhook_deliveries set status = 'pending', tries = 0, round = round + 1,
    next_attempt_at = clock_timestamp(), failed_at = null
    where id = p_id returning id, endpoint_id, round into v;
  perform graphile_worker.add_job('webhook__deliver', json_build_object('d', v.id, 'r', v.round, 'n', 0),
    queue_name => 'kiln-webhook:' || v.endpoint_id, max_attempts => 25);
end;
$$;
comment on function kiln_private.queue_delivery(uuid) is 'Starts a new round for a delivery (same message, same webhook-id): pending, tries 0, a job now.';

create or replace function kiln.redeliver_webhook(p_scope_id uuid, p_endpoint_id uuid, p_delivery_id uuid)
returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  perform 1 from kiln_private.webhook_deliveries d join kiln_private.webhook_endpoints e on e.id = d.endpoint_id
    where d.id = p_delivery_id and d.endpoint_id = p_endpoint_id and e.scope_id = p_scope_id
    for update of d;
  if not found then return false; end if;
  perform kiln_private.queue_delivery(p_delivery_id);
  return true;
end;
$$;
comment on function kiln.redeliver_webhook(uuid, uuid, uuid) is 'Sends a delivery''s message again (same webhook-id and body). False when it is not the scope''s.';

create or replace function kiln.recover_webhook_deliveries(p_scope_id uuid, p_endpoint_id uuid, p_since timestamptz)
returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln.recover_webhook_deliveries(uuid, uuid, timestamptz) is 'Sends again every delivery of the endpoint that failed since p_since. How many; null when the endpoint is not the scope''s.';

create or replace function kiln.send_webhook_test(p_scope_id uuid, p_endpoint_id uuid)
returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln.send_webhook_test(uuid, uuid) is 'Emits a webhook.test event delivered to this endpoint only. False when it is not the scope''s; KT001 when it is disabled.';

-- ------------------------------------------------------------------ delivering (task)

create or replace function kiln.begin_webhook_attempt(p_delivery_id uuid, p_round integer, p_tries integer)
returns json
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln.begin_webhook_attempt(uuid, integer, integer) is 'What an attempt needs (URL, encrypted secrets, the event and its frozen body), or null when the job is stale (delivery settled, another round or try) or the endpoint is gone; a disabled endpoint fails the delivery.';

create or replace function kiln.freeze_event_body(p_event_id bigint, p_body text)
returns text
language sql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
  -- First writer wins: every later delivery and stream sends the same bytes.
  with u as (update kiln_private.events set body = p_body where id = p_event_id and body is null returning body)
  select coalesce((select body from u), (select body from kiln_private.events where id = p_event_id));
$$;
comment on function kiln.freeze_event_body(bigint, text) is 'Stores an event''s rendered message body unless one is stored already; returns the stored one.';

-- (An earlier draft of this file had no round/try arguments.)
drop function if exists kiln.record_webhook_attempt(uuid, integer, text, text, integer, integer, integer[], integer);
create or replace function kiln.record_webhook_attempt(p_delivery_id uuid, p_round integer, p_tries integer, p_status_code integer, p_error_class text, p_error text,
                                                      p_duration_ms integer, p_retry_after integer, p_schedule integer[], p_disable_after_seconds integer)
returns json
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
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
                             else 'No successful delivery for 5 days while failing.' end
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
  perform graphile_worker.add_job('webhook__deliver', json_build_object('d', v_d.id, 'r', v_d.round, 'n', v_d.tries + 1),
    queue_name => 'kiln-webhook:' || v_d.endpoint_id, run_at => clock_timestamp() + make_interval(secs => v_delay), max_attempts => 25);
  return json_build_object('status', 'pending', 'delaySeconds', v_delay);
end;
$$;
comment on function kiln.record_webhook_attempt(uuid, integer, integer, integer, text, text, integer, integer, integer[], integer) is 'Logs an attempt of round p_round, try p_tries and moves the delivery on (an attempt of an earlier round or try is only logged): 2xx delivered; 410 (or failing past p_disable_after_seconds) disables the endpoint; otherwise the next attempt per p_schedule (seconds; Retry-After honoured within it), or failed when the schedule is used up.';

-- ------------------------------------------------------------------ GET /events

create or replace function kiln.read_events(p_scope_id uuid, p_after_tx xid8, p_after_id bigint, p_since timestamptz, p_limit integer)
returns table (tx text, id bigint, type text, occurred_at text, data json, body text)
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln.read_events(uuid, xid8, bigint, timestamptz, integer) is 'Events of a scope after a (tx, id) cursor, in (tx, id) order, from ended transactions only (the stream''s gap-free order); p_since bounds a fresh start.';

create or replace function kiln.events_held_back(p_scope_id uuid, p_after_tx xid8, p_after_id bigint)
returns boolean
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  -- Committed events that kiln.read_events holds back while an older transaction is still open:
  -- the stream reads again shortly instead of waiting for the next notification.
  select exists (
    select 1 from kiln_private.events e
    where e.scope_id = p_scope_id and e.tx >= pg_snapshot_xmin(pg_current_snapshot())
      and (p_after_tx is null or (e.tx, e.id) > (p_after_tx, p_after_id)));
$$;
comment on function kiln.events_held_back(uuid, xid8, bigint) is 'Whether the scope has committed events after the cursor that kiln.read_events does not return yet (an older transaction is still open).';

create or replace function kiln.events_horizon()
returns text
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  select pg_snapshot_xmin(pg_current_snapshot())::text;
$$;
comment on function kiln.events_horizon() is 'The oldest transaction still open: a GET /events stream opened without Last-Event-ID starts at (horizon, 0), so it sends what commits from now on and nothing earlier.';
