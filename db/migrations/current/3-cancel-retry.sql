-- Cancel, run retry and run history (issue #12): cancel a generation or a run (reservations
-- released, running provider calls aborted through NOTIFY "kiln:cancel"), retry a failed run on
-- its snapshot reusing its completed outputs, and list a workflow's runs.
-- Re-runnable: create or replace / if not exists throughout.

alter table kiln_private.workflow_runs add column if not exists retry_of uuid;
do $$
begin
  if not exists (select 1 from pg_constraint where conname = 'workflow_runs_retry_of_fkey') then
    alter table kiln_private.workflow_runs
      add constraint workflow_runs_retry_of_fkey foreign key (retry_of) references kiln_private.workflow_runs(id);
  end if;
end;
$$;
-- A failed run is retried at most once (a second retry, or a concurrent duplicate, is a conflict).
create unique index if not exists workflow_runs_retry_of_key on kiln_private.workflow_runs (retry_of) where retry_of is not null;
comment on column kiln_private.workflow_runs.retry_of is 'The failed run this run retries (same snapshot; its completed outputs reused), or null.';
comment on column kiln_private.workflow_run_outputs.generation_id is 'The generation that produces this output (null for skipped video outputs and for outputs a retry reused from the run it retries).';

-- ---------------------------------------------------------------- cancel a generation

create or replace function kiln_private.cancel_generation(p_id uuid) returns boolean
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln_private.cancel_generation(uuid) is 'Cancels a pending or processing generation: fails it with error ''canceled'' and releases its reservation (kiln.fail_generation), drops its queued job and, when it was processing, notifies channel kiln:cancel with its id so its worker aborts the provider call. False when it had already ended. Callers lock its run first, when it has one.';

create or replace function kiln.cancel_generation(p_account_id uuid, p_id uuid, p_origins text[]) returns json
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
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
  return json_build_object('outcome', 'canceled', 'body', kiln_private.generation_body(v_gen));
end;
$$;
comment on function kiln.cancel_generation(uuid,uuid,text[]) is 'Cancels a generation of the account created through one of p_origins: outcome canceled (failed with error ''canceled'', reservation released, its worker told to abort), conflict (already completed or failed) or missing; body = the generation as the API reads it. Never raises for these outcomes (safe in a batch).';

create or replace function kiln_private.authorize_controls(p_key_hashes bytea[], p_read_rpm integer)
returns table(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer)
language sql volatile
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
  select r.ord, r.status, r.key_id, r.account_id, r.workspace_id, r.tier, r.scopes, r.retry_after
  from kiln.authorize_requests(
         p_key_hashes,
         array_fill('write'::text, array[cardinality(p_key_hashes)]),
         array_fill('read'::text, array[cardinality(p_key_hashes)]),
         array_fill(p_read_rpm, array[cardinality(p_key_hashes)]),
         array_fill(false, array[cardinality(p_key_hashes)])) r;
$$;
comment on function kiln_private.authorize_controls(bytea[],integer) is 'kiln.authorize_requests for a batch of job controls (cancel): write scope, the per-key read bucket at p_read_rpm (a cancel costs what a poll costs) and each key''s own rpm.';

create or replace function kiln.cancel_generations_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_ids uuid[], p_origin text)
returns table(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, outcome text, body json)
language sql volatile security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
  select a.ord, a.status, a.key_id, a.account_id, a.workspace_id, a.tier, a.scopes, a.retry_after, c->>'outcome', c->'body'
  from kiln_private.authorize_controls(p_key_hashes, p_read_rpm) a
  left join lateral (
    select kiln.cancel_generation(a.account_id, p_ids[a.ord], array[p_origin]) as c where a.status = 'ok'
  ) x on true
  order by a.ord;
$$;
comment on function kiln.cancel_generations_for_keys(bytea[],integer,uuid[],text) is 'POST /generations/{id}/cancel for a batch in one transaction: authorizes each key (write scope, the per-key read bucket, the key''s own rpm) and, when admitted, cancels that generation of the key''s account created through p_origin (kiln.cancel_generation; outcome null when not admitted).';

-- ---------------------------------------------------------------- cancel a run

create or replace function kiln.cancel_workflow_run(p_account_id uuid, p_workflow_id uuid, p_run_id uuid) returns json
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_run kiln_private.workflow_runs;
  v_out record;
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
  return json_build_object('outcome', 'canceled', 'run', kiln.get_workflow_run(p_account_id, p_workflow_id, p_run_id));
end;
$$;
comment on function kiln.cancel_workflow_run(uuid,uuid,uuid) is 'Cancels a pending or running run of the account''s workflow: the run fails with error ''canceled'', outputs not started are abandoned, outputs in flight are canceled (kiln_private.cancel_generation: released, their workers told to abort), completed ones stay. Outcome canceled (with the run as kiln.get_workflow_run reads it), conflict (already completed or failed) or missing. Never raises for these outcomes.';

create or replace function kiln.cancel_workflow_runs_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_workflow_ids uuid[], p_run_ids uuid[])
returns table(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, outcome text, body json)
language sql volatile security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
  select a.ord, a.status, a.key_id, a.account_id, a.workspace_id, a.tier, a.scopes, a.retry_after, c->>'outcome', c->'run'
  from kiln_private.authorize_controls(p_key_hashes, p_read_rpm) a
  left join lateral (
    select kiln.cancel_workflow_run(a.account_id, p_workflow_ids[a.ord], p_run_ids[a.ord]) as c where a.status = 'ok'
  ) x on true
  order by a.ord;
$$;
comment on function kiln.cancel_workflow_runs_for_keys(bytea[],integer,uuid[],uuid[]) is 'POST /workflows/{id}/runs/{runId}/cancel for a batch in one transaction: authorizes each key (write scope, the per-key read bucket, the key''s own rpm) and, when admitted, cancels that run of the key''s account (kiln.cancel_workflow_run; outcome null when not admitted).';

-- ---------------------------------------------------------------- worker backstop

create or replace function kiln.filter_ended_generations(p_ids uuid[]) returns uuid[]
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select coalesce(array_agg(g.id), '{}') from kiln_private.generations g
  where g.id = any (p_ids) and g.status in ('completed', 'failed');
$$;
comment on function kiln.filter_ended_generations(uuid[]) is 'Those of the given generations that have ended (completed or failed): a worker aborts the ones it still runs — the backstop for a kiln:cancel notification it missed.';

-- ---------------------------------------------------------------- retry a run

create or replace function kiln_private.check_run_budget(p_account_id uuid, p_workspace_id uuid) returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln_private.check_run_budget(uuid,uuid) is 'Raises KQ001 / KP001 when a run started by this caller could not charge a single output (blocked tier, exhausted budget, Team plan not active or owner left).';

create or replace function kiln.retry_workflow_run(p_account_id uuid, p_key_id uuid, p_workspace_id uuid, p_origin text,
                                                   p_workflow_id uuid, p_run_id uuid, p_window_seconds integer, p_max_attempts integer)
returns uuid
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
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
    select o.*, case when o.keep then null else gen_random_uuid() end as gen_id,
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
$$;
comment on function kiln.retry_workflow_run(uuid,uuid,uuid,text,uuid,uuid,integer,integer) is 'Retries a failed run of the account''s workflow as a new run (retry_of = it) on the same snapshot, billed to the caller: completed and skipped outputs are reused (results copied, cost 0, never run or charged again), outputs of the old run still in flight are canceled, and every other output runs again once the inputs it reads are settled. KN001 unknown run, KT001 not failed or already retried, KQ001 / KP001 budget.';

-- ---------------------------------------------------------------- run history

create or replace function kiln.list_workflow_runs(p_account_id uuid, p_workflow_id uuid, p_limit integer, p_offset integer) returns json
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select case when exists (select 1 from kiln_private.workflows w where w.id = p_workflow_id and w.account_id = p_account_id) then (
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
$$;
comment on function kiln.list_workflow_runs(uuid,uuid,integer,integer) is 'A page of the runs of the account''s workflow, newest first (id, status, progress, createdAt, completedAt, retryOf); null when the workflow is not the account''s.';

create or replace function kiln.list_workflow_runs_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_workflow_ids uuid[], p_limits integer[], p_offsets integer[])
returns table(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
language sql volatile security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
  select r.*, case when r.status = 'ok' then kiln.list_workflow_runs(r.account_id, p_workflow_ids[r.ord], p_limits[r.ord], p_offsets[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$$;
comment on function kiln.list_workflow_runs_for_keys(bytea[],integer,uuid[],integer[],integer[]) is 'GET /workflows/{id}/runs for a batch in one transaction: authorizes each key (read scope, the per-key read bucket and the key''s own rpm) and, when admitted, returns that page of runs (kiln.list_workflow_runs; null body when the workflow is not the key''s account''s).';

-- ---------------------------------------------------------------- the run body says what it retried

create or replace function kiln.get_workflow_run(p_account_id uuid, p_workflow_id uuid, p_run_id uuid) returns json
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
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
               'costMicros', coalesce(o.cost_micros, 0))
             order by o.finished_at, o.ordinal), '[]'::json)
      from kiln_private.workflow_run_outputs o
      where o.run_id = r.id and o.status in ('completed', 'failed', 'skipped')))
  from kiln_private.workflow_runs r
  where r.id = p_run_id and r.account_id = p_account_id and r.workflow_id = p_workflow_id;
$$;
comment on function kiln.get_workflow_run(uuid,uuid,uuid) is 'A run''s state (with the run it retried, if any) and its settled results (in settling order) for its owner, when it belongs to that workflow; null otherwise.';
