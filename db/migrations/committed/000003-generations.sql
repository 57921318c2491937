--! Previous: sha1:97a8350fd142b48603ab83feebfbf3140313cfc1
--! Hash: sha1:d745b29dbf5b6cf46b708b72fe54c9837b9cfae5
--! Message: generations

--! split: 2-generations.sql
-- Generations, the image store, worker heartbeats and analyst views.
--
-- A generation is reserved, inserted and queued in one transaction (kiln.create_generation);
-- the worker task moves it pending → processing → completed | failed through the functions
-- below, each one SQL call, each idempotent, so a retried or duplicated job never charges twice
-- and a failed one never leaves a reservation behind.
--
-- graphile_worker is referenced only inside plpgsql bodies (resolved at call time): the shadow
-- database graphile-migrate commits against does not have that schema.
--
-- Idempotent (graphile-migrate "current"): drop what this file creates, then create it again.

drop view if exists kiln.generation_latency;
drop view if exists kiln.generation_timings;
drop view if exists kiln.daily_generations;
drop view if exists kiln.daily_spend;
drop function if exists kiln.create_generation(uuid, uuid, uuid, text, text, text, bigint, jsonb, bigint, int);
drop function if exists kiln.create_generations(uuid[], uuid[], uuid[], text[], text[], text[], bigint[], jsonb[], bigint[], int[]);
drop function if exists kiln_private.insert_generation(uuid, uuid, uuid, text, text, text, bigint, jsonb, bigint, int, boolean);
drop function if exists kiln.get_generations(uuid[], uuid[], text[]);
drop function if exists kiln.start_generation(uuid, text, bigint, int, int, int);
drop function if exists kiln.defer_generation(uuid, text, bigint, text);
drop function if exists kiln.complete_generation(uuid, jsonb, bigint, text);
drop function if exists kiln.fail_generation(uuid, text);
drop function if exists kiln.get_generation(uuid, uuid, text[]);
drop function if exists kiln_private.nudge_waiting_generation(uuid);
drop function if exists kiln_private.enqueue_new_job(text, json, text, int);
drop function if exists kiln_private.enqueue_new_job(text, json, text, int, boolean);
drop function if exists kiln_private.worker_alive(text, int);
drop function if exists kiln.beat_worker(text, text, int);
drop function if exists kiln.retire_worker(text);
drop function if exists kiln.sweep_workers(int);
drop function if exists kiln.put_object(text, uuid, bytea, text, text, int, int, text);
drop function if exists kiln.get_object(text);
drop function if exists kiln.ensure_secret(text, bytea);
drop type if exists kiln.object_meta cascade;
drop table if exists kiln_private.worker_heartbeats cascade;
drop table if exists kiln_private.generations cascade;
drop table if exists kiln_private.objects cascade;
drop table if exists kiln_private.secrets cascade;

--------------------------------------------------------------------------------
-- Parallel slots: the tier default (kiln_private.tiers.parallel_slots) unless an operator
-- sets a per-account override.

alter table kiln_private.accounts add column if not exists parallel_slots int check (parallel_slots >= 0);
comment on column kiln_private.accounts.parallel_slots is
  'How many of this account''s generations may be processing at once; null = the tier''s default.';

--------------------------------------------------------------------------------
-- Service secrets shared by every API process (e.g. the image URL signing key when
-- KILN_URL_SIGNING_SECRET is unset).

create table kiln_private.secrets (
  name text primary key,
  value bytea not null check (length(value) >= 32),
  created_at timestamptz not null default now()
);
comment on table kiln_private.secrets is 'Secrets generated once and shared by every Kiln process.';

create function kiln.ensure_secret(p_name text, p_candidate bytea) returns bytea
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_value bytea;
begin
  insert into kiln_private.secrets (name, value) values (p_name, p_candidate)
    on conflict (name) do nothing;
  select value into v_value from kiln_private.secrets where name = p_name;
  return v_value;
end;
$$;
comment on function kiln.ensure_secret(text, bytea) is
  'Returns the named secret, storing the candidate first when none exists (the first process to ask wins).';

--------------------------------------------------------------------------------
-- The image store (bucket workflow-images). Content lives in Postgres so any number of API and
-- worker processes share it. Paths are <account id>/<kind>/<uuid>.<ext>, or seed/<name> for
-- shared images (owner null).

create table kiln_private.objects (
  path text primary key check (
    length(path) <= 300
    and path ~ '^(seed|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(/[A-Za-z0-9][A-Za-z0-9_-]*)*/[A-Za-z0-9][A-Za-z0-9_.-]*$'
    and path !~ '\.\.'),
  bucket text not null default 'workflow-images' check (bucket = 'workflow-images'),
  owner_id uuid references kiln_private.accounts (id),
  data bytea not null,
  content_type text not null check (content_type ~ '^image/[a-z0-9.+-]+$'),
  format text not null check (format in ('png', 'jpeg', 'webp', 'avif', 'gif')),
  width int not null check (width > 0),
  height int not null check (height > 0),
  byte_size int not null check (byte_size >= 0),
  visibility text not null check (visibility in ('private', 'public')),
  created_at timestamptz not null default now(),
  -- Seed objects are shared and ownerless; everything else lives under its owner's id.
  check ((owner_id is null) = (path like 'seed/%')),
  check (owner_id is null or path like owner_id::text || '/%')
);
create index objects_owner_idx on kiln_private.objects (owner_id, created_at) where owner_id is not null;
comment on table kiln_private.objects is
  'The workflow-images store: image bytes and metadata by bucket-relative path.';

create type kiln.object_meta as (
  path text,
  owner_id uuid,
  content_type text,
  format text,
  width int,
  height int,
  byte_size int,
  visibility text,
  created_at timestamptz
);

create function kiln.put_object(
  p_path text,
  p_owner_id uuid,
  p_data bytea,
  p_content_type text,
  p_format text,
  p_width int,
  p_height int,
  p_visibility text
) returns kiln.object_meta
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln.put_object(text, uuid, bytea, text, text, int, int, text) is
  'Stores an image under a new path (never overwrites). Raises KC001 when the path is taken, KI001 for a bad path or metadata.';

create function kiln.get_object(p_path text)
  returns table (path text, owner_id uuid, content_type text, format text, width int, height int,
                 byte_size int, visibility text, created_at timestamptz, data bytea)
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select o.path, o.owner_id, o.content_type, o.format, o.width, o.height, o.byte_size, o.visibility, o.created_at, o.data
  from kiln_private.objects o where o.path = p_path;
$$;
comment on function kiln.get_object(text) is 'One stored object with its bytes (no row when absent). Ownership is the caller''s check.';

--------------------------------------------------------------------------------
-- Worker heartbeats: every graphile-worker pool (its id is what jobs are locked_by) upserts its
-- row on an interval. Jobs locked by a pool without a recent heartbeat are unlocked by the sweep.

create table kiln_private.worker_heartbeats (
  worker_id text primary key,
  hostname text,
  pid int,
  started_at timestamptz not null default now(),
  last_seen timestamptz not null default now()
);
comment on table kiln_private.worker_heartbeats is
  'Liveness of graphile-worker pools (worker_id = the pool id jobs are locked by).';

create function kiln_private.worker_alive(p_worker_id text, p_stale_seconds int) returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select exists (
    select 1 from kiln_private.worker_heartbeats
    where worker_id = p_worker_id and last_seen >= now() - make_interval(secs => p_stale_seconds));
$$;
comment on function kiln_private.worker_alive(text, int) is
  'Whether a worker pool has heartbeated within the stale window.';

--------------------------------------------------------------------------------
-- Generations.

create table kiln_private.generations (
  id uuid primary key,
  account_id uuid not null references kiln_private.accounts (id),
  key_id uuid references kiln_private.api_keys (id),
  workspace_id uuid references kiln_private.workspaces (id),
  origin text not null check (origin in ('api', 'mcp', 'app', 'workflow')),
  model_id text not null,
  type text not null check (type in ('image', 'code')),
  -- The validated request plus a snapshot of the catalog entry it was priced with.
  request jsonb not null,
  status text not null default 'pending' check (status in ('pending', 'processing', 'completed', 'failed')),
  -- Internal result: {type:"image", path, mediaType, aspectRatio, width, height} or {type:"code", code, structuredOutput}.
  result jsonb,
  -- Client-facing failure message (status failed).
  error text,
  -- Last transient failure, kept for operators while the job retries.
  last_error text,
  reserved_micros bigint not null check (reserved_micros >= 0),
  cost_micros bigint check (cost_micros >= 0),
  charge_id uuid not null references kiln_private.charges (id),
  provider_request_id text,
  -- Executions started (crash takeovers and retries included).
  attempts int not null default 0,
  max_attempts int not null check (max_attempts between 1 and 100),
  -- True while the generation waits for one of the account's parallel slots.
  waiting boolean not null default false,
  -- Lease: the worker pool and job executing it (status processing).
  worker_id text,
  job_id bigint,
  created_at timestamptz not null default now(),
  started_at timestamptz,
  finished_at timestamptz,
  updated_at timestamptz not null default now(),
  check ((status in ('completed', 'failed')) = (finished_at is not null)),
  check (status <> 'completed' or (result is not null and cost_micros is not null)),
  check (status <> 'failed' or error is not null)
);
create index generations_account_created_idx on kiln_private.generations (account_id, created_at);
create index generations_active_idx on kiln_private.generations (account_id, status, created_at)
  where status in ('pending', 'processing');
create index generations_created_idx on kiln_private.generations (created_at);
comment on table kiln_private.generations is
  'Generation jobs: request, state, result, cost and the charge that bills them.';

-- graphile_worker.add_job runs its job-key replacement with a cached generic plan that scans the
-- whole jobs table, so each enqueue gets slower as a backlog grows (≈0.3 ms → 0.8 ms per job at
-- a few thousand queued jobs). A brand-new key cannot conflict with anything, so the hot path
-- inserts the job row itself — the same row add_job would write — and sends the same
-- notification. Relies on graphile-worker 0.17's table layout (pinned in package.json; every
-- generation test exercises it). Rare paths (slot waits, nudges) keep using add_job.
create function kiln_private.enqueue_new_job(p_task text, p_payload json, p_key text, p_max_attempts int, p_notify boolean)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_task int;
begin
  select id into v_task from graphile_worker._private_tasks where identifier = p_task;
  if not found then
    perform graphile_worker.add_job(p_task, p_payload, job_key => p_key, max_attempts => p_max_attempts);
    return;
  end if;
  insert into graphile_worker._private_jobs (task_id, payload, max_attempts, key)
    values (v_task, p_payload, p_max_attempts, p_key);
  if p_notify then
    perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":1}');
  end if;
end;
$$;
comment on function kiln_private.enqueue_new_job(text, json, text, int, boolean) is
  'Queues a job under a key that cannot exist yet (what graphile_worker.add_job does for a new key, minus its table-wide key scan). p_notify false: the caller notifies once for a batch.';

create function kiln_private.insert_generation(
  p_account_id uuid,
  p_key_id uuid,
  p_workspace_id uuid,
  p_origin text,
  p_type text,
  p_model_id text,
  p_model_version bigint,
  p_request jsonb,
  p_reserve_micros bigint,
  p_max_attempts int,
  p_notify boolean
) returns uuid
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_model kiln_private.models;
  v_id uuid := gen_random_uuid();
  v_charge kiln_private.charges;
begin
  if p_type is null or p_type not in ('image', 'code') then
    raise exception 'type must be image or code' using errcode = 'KI001';
  end if;
  select * into v_model from kiln_private.models where id = p_model_id and enabled;
  if not found then
    raise exception 'model "%" is not in the catalog', left(p_model_id, 200) using errcode = 'KI001';
  end if;
  -- The caller priced the reservation from a cached catalog entry: refuse a stale one.
  if p_model_version is not null
     and p_model_version <> (extract(epoch from v_model.updated_at) * 1000000)::bigint then
    raise exception 'the catalog entry changed; price again' using errcode = 'KS001';
  end if;
  if (p_type = 'image') <> (v_model.category = 'image') then
    raise exception 'model "%" cannot produce % output', v_model.id, p_type using errcode = 'KI001';
  end if;

  v_charge := kiln.reserve_budget(p_account_id, p_workspace_id, p_key_id, p_model_id, p_origin,
                                  p_reserve_micros, v_id, null, null);
  insert into kiln_private.generations
    (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, charge_id, max_attempts)
  values
    (v_id, p_account_id, p_key_id, p_workspace_id, p_origin, p_model_id, p_type, p_request,
     p_reserve_micros, v_charge.id, p_max_attempts);
  -- job_key = generation id: any later enqueue of the same generation collapses into this job.
  perform kiln_private.enqueue_new_job('generation__run', json_build_object('id', v_id), v_id::text, p_max_attempts, p_notify);
  return v_id;
end;
$$;
comment on function kiln_private.insert_generation(uuid, uuid, uuid, text, text, text, bigint, jsonb, bigint, int, boolean) is
  'The body of create_generation(s): model check, worst-case reservation, insert, enqueue.';

create function kiln.create_generation(
  p_account_id uuid,
  p_key_id uuid,
  p_workspace_id uuid,
  p_origin text,
  p_type text,
  p_model_id text,
  p_model_version bigint,
  p_request jsonb,
  p_reserve_micros bigint,
  p_max_attempts int
) returns uuid
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select kiln_private.insert_generation(p_account_id, p_key_id, p_workspace_id, p_origin, p_type, p_model_id,
                                        p_model_version, p_request, p_reserve_micros, p_max_attempts, true);
$$;
comment on function kiln.create_generation(uuid, uuid, uuid, text, text, text, bigint, jsonb, bigint, int) is
  'Checks the model, reserves the worst-case cost, inserts the generation and queues generation__run, all in one transaction. Raises KI001 (model unknown, disabled or incompatible), KQ001/KP001 (budget), KS001 (stale catalog price; internal).';

create function kiln.create_generations(
  p_account_ids uuid[],
  p_key_ids uuid[],
  p_workspace_ids uuid[],
  p_origins text[],
  p_types text[],
  p_model_ids text[],
  p_model_versions bigint[],
  p_requests jsonb[],
  p_reserves bigint[],
  p_max_attempts int[]
) returns table (ord int, id uuid, error_code text, error_message text)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_i int;
  v_created int := 0;
begin
  if cardinality(p_account_ids) > 50 then
    raise exception 'at most 50 generations per call' using errcode = '22023';
  end if;
  -- Budget pools are locked in one global order, so concurrent batches cannot deadlock.
  for v_i in
    select s.i from generate_subscripts(p_account_ids, 1) as s(i)
      order by coalesce(p_workspace_ids[s.i], p_account_ids[s.i]), s.i
  loop
    ord := v_i;
    begin
      id := kiln_private.insert_generation(p_account_ids[v_i], p_key_ids[v_i], p_workspace_ids[v_i], p_origins[v_i],
        p_types[v_i], p_model_ids[v_i], p_model_versions[v_i], p_requests[v_i], p_reserves[v_i], p_max_attempts[v_i], false);
      error_code := null;
      error_message := null;
      v_created := v_created + 1;
    exception
      -- A business refusal affects its own request only; anything else fails the batch.
      when sqlstate 'KI001' or sqlstate 'KQ001' or sqlstate 'KP001' or sqlstate 'KS001' or sqlstate 'KN001' then
        id := null;
        error_code := sqlstate;
        error_message := sqlerrm;
    end;
    return next;
  end loop;
  if v_created > 0 then
    perform pg_notify('jobs:insert', json_build_object('r', random(), 'count', v_created)::text);
  end if;
end;
$$;
comment on function kiln.create_generations(uuid[], uuid[], uuid[], text[], text[], text[], bigint[], jsonb[], bigint[], int[]) is
  'create_generation for up to 50 requests in one transaction (the API batches concurrent POSTs). Each row reports its id, or the SQLSTATE and message of its own business error; the others still commit.';

-- Wakes the oldest generation of the account that waits for a parallel slot.
create function kiln_private.nudge_waiting_generation(p_account_id uuid) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_next kiln_private.generations;
begin
  select * into v_next from kiln_private.generations
    where account_id = p_account_id and status = 'pending' and waiting
    order by created_at
    limit 1;
  if found then
    -- Same job key: moves the waiting job's run_at to now instead of adding a second job.
    perform graphile_worker.add_job('generation__run', json_build_object('id', v_next.id),
                                    job_key => v_next.id::text, max_attempts => v_next.max_attempts);
  end if;
end;
$$;
comment on function kiln_private.nudge_waiting_generation(uuid) is
  'Runs the oldest slot-waiting generation of an account now (called when a slot frees).';

create function kiln.start_generation(
  p_id uuid,
  p_worker_id text,
  p_job_id bigint,
  p_stale_seconds int,
  p_wait_ms int,
  p_job_max_attempts int
) returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_gen kiln_private.generations;
  v_account kiln_private.accounts;
  v_slots int;
  v_busy int;
begin
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  if v_gen.status in ('completed', 'failed') then
    return json_build_object('outcome', 'done', 'status', v_gen.status);
  end if;

  if v_gen.status = 'processing' then
    if v_gen.worker_id = p_worker_id and v_gen.job_id = p_job_id then
      null; -- the same job again (cannot normally happen): carry on
    elsif v_gen.worker_id is not null
          and exists (select 1 from graphile_worker._private_jobs j
                      where j.id = v_gen.job_id and j.locked_by = v_gen.worker_id)
          -- A lease younger than the stale window counts as live too: a pool may start its
          -- first job just before its first heartbeat lands.
          and (v_gen.updated_at > now() - make_interval(secs => p_stale_seconds)
               or kiln_private.worker_alive(v_gen.worker_id, p_stale_seconds)) then
      -- A live worker is running it, however slowly: never run it twice.
      return json_build_object('outcome', 'busy');
    end if;
    -- Otherwise its worker died (or let go of the job): take it over; the slot is already held.
  else
    -- pending: take one of the account's parallel slots, or wait for one. Serialised per account.
    perform pg_advisory_xact_lock(hashtextextended('kiln.slots:' || v_gen.account_id::text, 0));
    select * into v_account from kiln_private.accounts where id = v_gen.account_id;
    if v_account.tier = 'blocked' then
      perform kiln.fail_generation(p_id, 'this account cannot run generations');
      return json_build_object('outcome', 'done', 'status', 'failed');
    end if;
    select coalesce(v_account.parallel_slots, t.parallel_slots) into v_slots
      from kiln_private.tiers t where t.tier = v_account.tier;
    -- Slots are shared with workflow outputs (kiln_private.busy_slots, defined with workflows).
    v_busy := kiln_private.busy_slots(v_gen.account_id);
    if v_busy >= v_slots then
      -- Never rejected: wait pending and look again later (or sooner, when a slot frees).
      update kiln_private.generations set waiting = true, updated_at = now() where id = p_id;
      perform graphile_worker.add_job('generation__run', json_build_object('id', p_id),
                                      run_at => now() + make_interval(secs => p_wait_ms / 1000.0),
                                      job_key => p_id::text,
                                      max_attempts => coalesce(p_job_max_attempts, v_gen.max_attempts));
      return json_build_object('outcome', 'wait');
    end if;
  end if;

  update kiln_private.generations
    set status = 'processing',
        waiting = false,
        attempts = attempts + 1,
        worker_id = p_worker_id,
        job_id = p_job_id,
        started_at = coalesce(started_at, now()),
        updated_at = now()
    where id = p_id
    returning * into v_gen;
  return json_build_object(
    'outcome', 'run',
    'attempt', v_gen.attempts,
    'max_attempts', v_gen.max_attempts,
    'account_id', v_gen.account_id,
    'type', v_gen.type,
    'model_id', v_gen.model_id,
    'request', v_gen.request,
    'reserved_micros', v_gen.reserved_micros);
end;
$$;
comment on function kiln.start_generation(uuid, text, bigint, int, int, int) is
  'Moves a generation to processing for a worker''s job, respecting the account''s parallel slots (outcome run), or says why not: wait (slots full; re-queued for later), busy (a live worker runs it), done (already settled), missing.';

create function kiln.defer_generation(p_id uuid, p_worker_id text, p_job_id bigint, p_error text)
  returns kiln_private.generations
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_gen kiln_private.generations;
begin
  update kiln_private.generations
    set status = 'pending', worker_id = null, job_id = null, last_error = left(p_error, 1000), updated_at = now()
    where id = p_id and status = 'processing' and worker_id = p_worker_id and job_id = p_job_id
    returning * into v_gen;
  if found then
    perform kiln_private.nudge_waiting_generation(v_gen.account_id);
  end if;
  return v_gen;
end;
$$;
comment on function kiln.defer_generation(uuid, text, bigint, text) is
  'A transient failure: back to pending (freeing the slot) until the job''s retry. Only the lease holder may defer.';

create function kiln.complete_generation(p_id uuid, p_result jsonb, p_cost_micros bigint, p_provider_request_id text)
  returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_gen kiln_private.generations;
  v_charge kiln_private.charges;
begin
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if not found then
    raise exception 'generation not found' using errcode = 'KN001';
  end if;
  if v_gen.status in ('completed', 'failed') then
    -- Idempotent: a duplicated or retried job finds the first result in place.
    return json_build_object('applied', false, 'status', v_gen.status, 'cost_micros', v_gen.cost_micros);
  end if;
  v_charge := kiln.settle_charge(v_gen.charge_id, p_cost_micros);
  update kiln_private.generations
    set status = 'completed',
        result = p_result,
        cost_micros = coalesce(v_charge.settled_micros, 0),
        provider_request_id = left(p_provider_request_id, 200),
        waiting = false,
        finished_at = now(),
        updated_at = now()
    where id = p_id;
  perform kiln_private.nudge_waiting_generation(v_gen.account_id);
  return json_build_object('applied', true, 'status', 'completed', 'cost_micros', v_charge.settled_micros);
end;
$$;
comment on function kiln.complete_generation(uuid, jsonb, bigint, text) is
  'Stores the result and settles the charge at the actual cost (clamped to the reservation) in one call. Idempotent: only the first completion of a generation applies.';

create function kiln.fail_generation(p_id uuid, p_error text) returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_gen kiln_private.generations;
begin
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if not found then
    raise exception 'generation not found' using errcode = 'KN001';
  end if;
  if v_gen.status in ('completed', 'failed') then
    return json_build_object('applied', false, 'status', v_gen.status);
  end if;
  perform kiln.release_charge(v_gen.charge_id);
  update kiln_private.generations
    set status = 'failed',
        error = left(coalesce(nullif(p_error, ''), 'generation failed'), 1000),
        waiting = false,
        finished_at = now(),
        updated_at = now()
    where id = p_id;
  perform kiln_private.nudge_waiting_generation(v_gen.account_id);
  return json_build_object('applied', true, 'status', 'failed');
end;
$$;
comment on function kiln.fail_generation(uuid, text) is
  'Fails a generation with a client-safe message and releases its reservation in one call. Idempotent.';

create function kiln.get_generation(p_account_id uuid, p_id uuid, p_origins text[]) returns json
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_gen kiln_private.generations;
begin
  -- plpgsql rather than sql: the plan is cached per session (this runs on every poll).
  select * into v_gen from kiln_private.generations
    where id = p_id and account_id = p_account_id and origin = any (p_origins);
  if not found then
    return null;
  end if;
  return json_build_object(
    'id', v_gen.id,
    'status', v_gen.status,
    'type', v_gen.type,
    'result', case when v_gen.status = 'completed' then v_gen.result end,
    'error', case when v_gen.status = 'failed' then v_gen.error end,
    'cost_micros', v_gen.cost_micros);
end;
$$;
comment on function kiln.get_generation(uuid, uuid, text[]) is
  'A generation''s state for its owner, when created through one of the given origins; null otherwise.';

create function kiln.get_generations(p_account_ids uuid[], p_ids uuid[], p_origins text[])
  returns table (ord int, body json)
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  return query
    select s.i, json_build_object(
      'id', g.id,
      'status', g.status,
      'type', g.type,
      'result', case when g.status = 'completed' then g.result end,
      'error', case when g.status = 'failed' then g.error end,
      'cost_micros', g.cost_micros)
    from generate_subscripts(p_ids, 1) as s(i)
    join kiln_private.generations g
      on g.id = p_ids[s.i] and g.account_id = p_account_ids[s.i] and g.origin = any (p_origins);
end;
$$;
comment on function kiln.get_generations(uuid[], uuid[], text[]) is
  'get_generation for many (account, id) pairs in one call (the API batches concurrent polls); rows only for the visible ones.';

--------------------------------------------------------------------------------
-- Worker liveness and crash recovery.

create function kiln.beat_worker(p_worker_id text, p_hostname text, p_pid int) returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  insert into kiln_private.worker_heartbeats as h (worker_id, hostname, pid)
    values (p_worker_id, p_hostname, p_pid)
    on conflict (worker_id) do update set last_seen = now();
  -- graphile-worker unlocks any job locked for 4 hours, live worker or not: keep a live
  -- worker's locks fresh so a slow provider call is never run twice.
  update graphile_worker._private_jobs set locked_at = now()
    where locked_by = p_worker_id and locked_at < now() - interval '1 hour';
end;
$$;
comment on function kiln.beat_worker(text, text, int) is
  'Records that a worker pool is alive (and refreshes its job locks so they never look abandoned).';

create function kiln.retire_worker(p_worker_id text) returns void
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  delete from kiln_private.worker_heartbeats where worker_id = p_worker_id;
$$;
comment on function kiln.retire_worker(text) is 'Forgets a worker pool that shut down cleanly.';

create function kiln.sweep_workers(p_stale_seconds int) returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_stale interval := make_interval(secs => p_stale_seconds);
  v_dead text[];
  v_gen record;
  v_failed int := 0;
begin
  -- One sweeper at a time; the others skip this round.
  if not pg_try_advisory_xact_lock(hashtextextended('kiln.sweep_workers', 0)) then
    return json_build_object('skipped', true);
  end if;

  -- Pools holding locks without a recent heartbeat. A lock younger than the stale window is
  -- never touched: a pool may lock its first job just before its first heartbeat lands.
  select coalesce(array_agg(distinct locked_by), array[]::text[]) into v_dead
    from (
      select j.locked_by from graphile_worker._private_jobs j
        where j.locked_by is not null and j.locked_at < now() - v_stale
      union
      select q.locked_by from graphile_worker._private_job_queues q
        where q.locked_by is not null and q.locked_at < now() - v_stale
    ) l
    where not kiln_private.worker_alive(l.locked_by, p_stale_seconds);
  if cardinality(v_dead) > 0 then
    perform graphile_worker.force_unlock_workers(v_dead);
    -- Wake idle workers now rather than at their next poll.
    perform pg_notify('jobs:insert', json_build_object('r', random(), 'count', cardinality(v_dead))::text);
  end if;
  delete from kiln_private.worker_heartbeats where last_seen < now() - v_stale;

  -- Generations no job will ever finish (e.g. a worker died during the final attempt, or the
  -- job was removed): fail them so no reservation dangles.
  for v_gen in
    select g.id from kiln_private.generations g
      where g.status in ('pending', 'processing')
        and g.updated_at < now() - v_stale
        and (g.worker_id is null or not kiln_private.worker_alive(g.worker_id, p_stale_seconds))
        and not exists (
          select 1 from graphile_worker._private_jobs j
            where j.key = g.id::text and (j.locked_at is not null or j.attempts < j.max_attempts))
        and not exists (
          select 1 from graphile_worker._private_jobs j
            where j.id = g.job_id and j.locked_by is not null)
      for update of g skip locked
  loop
    perform kiln.fail_generation(v_gen.id, 'generation could not be completed; nothing was charged');
    v_failed := v_failed + 1;
  end loop;

  return json_build_object('unlocked', v_dead, 'failed_generations', v_failed);
end;
$$;
comment on function kiln.sweep_workers(int) is
  'Crash recovery: unlocks jobs of worker pools whose heartbeat is older than the stale window (force_unlock_workers), and fails generations that no job can finish any more.';

--------------------------------------------------------------------------------
-- Analyst views (UTC days). Money in integer microdollars.

create view kiln.daily_spend as
  select
    (c.created_at at time zone 'UTC')::date as day,
    c.account_id,
    c.workspace_id,
    c.key_id,
    c.model_id,
    c.origin,
    count(*) as charges,
    count(*) filter (where c.status = 'settled') as settled_charges,
    count(*) filter (where c.status = 'released') as released_charges,
    count(*) filter (where c.status = 'reserved') as open_reservations,
    coalesce(sum(c.settled_micros), 0)::bigint as spend_micros,
    coalesce(sum(c.reserved_micros) filter (where c.status = 'reserved'), 0)::bigint as held_micros
  from kiln_private.charges c
  group by 1, 2, 3, 4, 5, 6;
comment on view kiln.daily_spend is
  'Ledger per UTC day, account, workspace (null = personal budget), API key (null = not a key), model and origin (api, mcp, app, workflow): charge counts by state, settled spend and still-held reservations, in microdollars.';

create view kiln.daily_generations as
  select
    (g.created_at at time zone 'UTC')::date as day,
    g.account_id,
    g.workspace_id,
    g.key_id,
    g.model_id,
    g.origin,
    g.type,
    count(*) as generations,
    count(*) filter (where g.status = 'completed') as completed,
    count(*) filter (where g.status = 'failed') as failed,
    count(*) filter (where g.status in ('pending', 'processing')) as in_flight,
    coalesce(sum(g.cost_micros), 0)::bigint as cost_micros
  from kiln_private.generations g
  group by 1, 2, 3, 4, 5, 6, 7;
comment on view kiln.daily_generations is
  'Generations per UTC day (of creation), account, workspace, API key, model, origin and type: totals by outcome and billed cost in microdollars.';

create view kiln.generation_latency as
  select
    (g.created_at at time zone 'UTC')::date as day,
    g.model_id,
    g.origin,
    count(*) filter (where g.started_at is not null) as started,
    percentile_cont(0.5) within group (order by extract(epoch from g.started_at - g.created_at) * 1000)
      filter (where g.started_at is not null) as queued_p50_ms,
    percentile_cont(0.95) within group (order by extract(epoch from g.started_at - g.created_at) * 1000)
      filter (where g.started_at is not null) as queued_p95_ms,
    percentile_cont(0.99) within group (order by extract(epoch from g.started_at - g.created_at) * 1000)
      filter (where g.started_at is not null) as queued_p99_ms,
    count(*) filter (where g.status = 'completed') as completed,
    percentile_cont(0.5) within group (order by extract(epoch from g.finished_at - g.started_at) * 1000)
      filter (where g.status = 'completed') as processing_p50_ms,
    percentile_cont(0.95) within group (order by extract(epoch from g.finished_at - g.started_at) * 1000)
      filter (where g.status = 'completed') as processing_p95_ms,
    percentile_cont(0.99) within group (order by extract(epoch from g.finished_at - g.started_at) * 1000)
      filter (where g.status = 'completed') as processing_p99_ms
  from kiln_private.generations g
  group by 1, 2, 3;
comment on view kiln.generation_latency is
  'Generation latency per UTC day, model and origin in milliseconds: queued = created → first started (waiting for a worker and a parallel slot), processing = started → completed (completed generations only); p50/p95/p99.';

create view kiln.generation_timings as
  select
    g.id,
    (g.created_at at time zone 'UTC')::date as day,
    g.account_id,
    g.workspace_id,
    g.key_id,
    g.model_id,
    g.origin,
    g.type,
    g.status,
    g.attempts,
    g.cost_micros,
    g.created_at,
    extract(epoch from g.started_at - g.created_at) * 1000 as queued_ms,
    extract(epoch from g.finished_at - g.started_at) * 1000 as processing_ms
  from kiln_private.generations g;
comment on view kiln.generation_timings is
  'One row per generation with its queued (created → first started) and processing (started → finished) times in milliseconds, for percentiles over any window; null while not yet started or finished.';
