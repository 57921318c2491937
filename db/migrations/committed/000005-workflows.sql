--! Previous: sha1:a37dcaceb6e5e486dd1ae870a15b0faff3ed137f
--! Hash: sha1:8d2d151536475f393eb52d124de0f6e31fc1956a
--! Message: workflows

--! split: 4-workflows.sql
-- Workflows: saved graphs, immutable run snapshots, and per-output execution on graphile-worker.
--
-- A run executes one unit per prompt → output edge of its snapshot (kiln_private.workflow_run_outputs):
-- each unit is one result, one provider call and one charge. Starting a run is one transaction
-- (kiln.start_workflow_run: snapshot, units with their pending-dependency counts, jobs for the
-- ready ones). Completing a unit is one transaction too (kiln.complete_workflow_output: settle,
-- record the result, decrement dependents, enqueue those that reach zero), so no edge can be lost or
-- run twice; every transition is idempotent, so duplicated or retried jobs are harmless.
--
-- graphile_worker and the generations migration (worker heartbeats, generations) are referenced only
-- inside plpgsql bodies (resolved at call time): graphile-migrate's shadow database lacks graphile_worker.
--
-- Idempotent (graphile-migrate "current"): drop what this file creates, then create it again.

drop view if exists kiln.daily_workflow_runs;
drop function if exists kiln.create_workflow(uuid, uuid, text, jsonb);
drop function if exists kiln.update_workflow(uuid, jsonb, text);
drop function if exists kiln.get_workflow(uuid, uuid);
drop function if exists kiln.snapshot_workflow(uuid, uuid);
drop function if exists kiln.list_workflows(uuid, int, int);
drop function if exists kiln.start_workflow_run(uuid, uuid, uuid, text, uuid, jsonb, jsonb, int, int);
drop function if exists kiln.start_workflow_output(uuid, text, text, bigint, int, int);
drop function if exists kiln.reserve_workflow_output(uuid, text, bigint);
drop function if exists kiln.complete_workflow_output(uuid, text, jsonb, bigint, text);
drop function if exists kiln.fail_workflow_output(uuid, text, text);
drop function if exists kiln.defer_workflow_output(uuid, text, text, bigint, text);
drop function if exists kiln.expire_workflow_run(uuid, int);
drop function if exists kiln.get_workflow_run(uuid, uuid, uuid);
drop function if exists kiln_private.workflow_job_key(uuid, text);
drop function if exists kiln_private.busy_slots(uuid);
drop function if exists kiln_private.enqueue_workflow_outputs(uuid, text[], int);
drop function if exists kiln_private.wake_workflow_output(uuid);
drop function if exists kiln_private.abandon_workflow_outputs(uuid, text[]);
drop function if exists kiln_private.fail_workflow_run(uuid, text);
drop function if exists kiln_private.note_workflow_progress(uuid, int);
drop function if exists kiln_private.write_back_workflow_run(uuid);
drop table if exists kiln_private.workflow_run_outputs cascade;
drop table if exists kiln_private.workflow_runs cascade;
drop table if exists kiln_private.workflows cascade;
drop index if exists kiln_private.charges_workflow_output_key;

--------------------------------------------------------------------------------
-- Saved workflows.

create table kiln_private.workflows (
  id uuid primary key default gen_random_uuid(),
  account_id uuid not null references kiln_private.accounts (id),
  -- The Team workspace the workflow belongs to (informational; billing follows the caller's key).
  workspace_id uuid references kiln_private.workspaces (id),
  name text not null check (length(name) between 1 and 200),
  -- The graph (DESIGN "Workflow graph format"), validated by the service before it is stored.
  graph jsonb not null check (jsonb_typeof(graph) = 'object'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index workflows_account_updated_idx on kiln_private.workflows (account_id, updated_at desc, id desc);
comment on table kiln_private.workflows is 'Saved workflow graphs, one owner each.';

create function kiln.create_workflow(p_account_id uuid, p_workspace_id uuid, p_name text, p_graph jsonb)
  returns kiln_private.workflows
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln.create_workflow(uuid, uuid, text, jsonb) is
  'Saves a new workflow (the graph is validated by the caller). KF001 when the owner is not a member of the given workspace.';

create function kiln.update_workflow(p_id uuid, p_graph jsonb, p_name text)
  returns kiln_private.workflows
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row kiln_private.workflows;
begin
  update kiln_private.workflows
    set graph = coalesce(p_graph, graph), name = coalesce(p_name, name), updated_at = now()
    where id = p_id
    returning * into v_row;
  if not found then
    raise exception 'workflow not found' using errcode = 'KN001';
  end if;
  return v_row;
exception
  when check_violation then
    raise exception 'invalid workflow: the name must be 1 to 200 characters and the graph an object' using errcode = 'KI001';
end;
$$;
comment on function kiln.update_workflow(uuid, jsonb, text) is
  'Replaces a workflow''s graph and/or name (an edit: bumps updated_at). Runs already started keep their snapshot.';

create function kiln.get_workflow(p_id uuid, p_account_id uuid)
  returns setof kiln_private.workflows
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select * from kiln_private.workflows where id = p_id and (p_account_id is null or account_id = p_account_id);
$$;
comment on function kiln.get_workflow(uuid, uuid) is
  'One workflow with its stored graph; for p_account_id only when that account owns it (null = operator access).';

create function kiln.snapshot_workflow(p_account_id uuid, p_id uuid)
  returns table (graph jsonb, models json)
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  -- FOR SHARE: an edit cannot commit between this read and the run insert of the same transaction.
  select w.graph,
         (select coalesce(json_agg(m), '[]'::json) from kiln.models m where m.enabled)
  from (select * from kiln_private.workflows where id = p_id and account_id = p_account_id for share) w;
$$;
comment on function kiln.snapshot_workflow(uuid, uuid) is
  'The graph of an owned workflow, locked until the end of the transaction, plus the enabled catalog: what a run snapshots.';

create function kiln.list_workflows(p_account_id uuid, p_limit int, p_offset int) returns json
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
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
          where account_id = p_account_id
          order by updated_at desc, id desc
          limit p_limit offset p_offset) w);
end;
$$;
comment on function kiln.list_workflows(uuid, int, int) is
  'An account''s workflow summaries (id, name, updated_at), most recently updated first. KI001 for a limit outside 1–100 or a negative offset.';

--------------------------------------------------------------------------------
-- Runs and their units.

create table kiln_private.workflow_runs (
  id uuid primary key default gen_random_uuid(),
  workflow_id uuid not null references kiln_private.workflows (id),
  account_id uuid not null references kiln_private.accounts (id),
  key_id uuid references kiln_private.api_keys (id),
  -- Team pool the outputs bill to; null = the personal budget.
  workspace_id uuid references kiln_private.workspaces (id),
  origin text not null check (origin in ('api', 'mcp', 'app')),
  -- The graph as it was when the run was enqueued. Never changes.
  snapshot jsonb not null,
  status text not null default 'pending' check (status in ('pending', 'running', 'completed', 'failed')),
  -- Outputs (units) in all; settled = completed + failed + skipped; abandoned = never started.
  total int not null check (total >= 0),
  settled int not null default 0 check (settled >= 0),
  abandoned int not null default 0 check (abandoned >= 0),
  error text,
  -- Units not started by then fail the run.
  deadline timestamptz not null,
  window_seconds int not null check (window_seconds > 0),
  -- Executions of one unit before it fails for good.
  max_attempts int not null check (max_attempts between 1 and 100),
  created_at timestamptz not null default now(),
  started_at timestamptz,
  completed_at timestamptz,
  updated_at timestamptz not null default now(),
  check (settled + abandoned <= total),
  check ((status in ('completed', 'failed')) = (completed_at is not null)),
  check (status <> 'failed' or error is not null)
);
create index workflow_runs_workflow_idx on kiln_private.workflow_runs (workflow_id, created_at);
create index workflow_runs_account_idx on kiln_private.workflow_runs (account_id, created_at);
comment on table kiln_private.workflow_runs is
  'Workflow runs: the immutable graph snapshot, status, progress counters and the run window deadline.';

create table kiln_private.workflow_run_outputs (
  run_id uuid not null references kiln_private.workflow_runs (id) on delete cascade,
  output_node_id text not null,
  prompt_node_id text not null,
  account_id uuid not null references kiln_private.accounts (id),
  -- Position of the prompt → output edge in the snapshot (orders results settling together).
  ordinal int not null,
  type text not null check (type in ('image', 'code', 'screen', 'design', 'video')),
  -- What the worker runs: prompt, model (catalog entry at run start), options and inputs.
  spec jsonb not null,
  -- Upstream outputs read by this one, how many of them are still unsettled, and the readers of this one.
  refs text[] not null default '{}',
  pending_deps int not null check (pending_deps >= 0),
  dependents text[] not null default '{}',
  status text not null check (status in ('waiting', 'queued', 'running', 'completed', 'failed', 'skipped', 'abandoned')),
  -- True while the unit waits for one of the account's parallel slots.
  waiting boolean not null default false,
  attempts int not null default 0,
  -- Lease: the worker pool and job executing it (status running).
  worker_id text,
  job_id bigint,
  charge_id uuid references kiln_private.charges (id),
  reserved_micros bigint check (reserved_micros >= 0),
  cost_micros bigint check (cost_micros >= 0),
  -- {type, path, mediaType, width, height} for images; {type, code} for code, screen and design.
  result jsonb,
  error text,
  last_error text,
  provider_request_id text,
  started_at timestamptz,
  finished_at timestamptz,
  updated_at timestamptz not null default now(),
  primary key (run_id, output_node_id),
  check ((status in ('completed', 'failed', 'skipped', 'abandoned')) = (finished_at is not null)),
  check (status <> 'completed' or (result is not null and cost_micros is not null)),
  check (status <> 'failed' or error is not null)
);
create index workflow_run_outputs_running_idx on kiln_private.workflow_run_outputs (account_id) where status = 'running';
create index workflow_run_outputs_waiting_idx on kiln_private.workflow_run_outputs (account_id, updated_at) where waiting;
comment on table kiln_private.workflow_run_outputs is
  'One row per prompt → output edge of a run: its execution state (dependency count, lease, charge) and its result.';

-- At most one charge per run output, whatever happens to its jobs.
create unique index charges_workflow_output_key on kiln_private.charges (workflow_run_id, node_id)
  where workflow_run_id is not null;

create function kiln_private.workflow_job_key(p_run_id uuid, p_output_id text) returns text
  language sql immutable parallel safe
as $$
  -- Output ids are user strings: the ':o:' marker keeps them apart from the run's deadline key.
  select case when p_output_id is null then 'workflow:' || p_run_id || ':deadline'
              else 'workflow:' || p_run_id || ':o:' || p_output_id end;
$$;
comment on function kiln_private.workflow_job_key(uuid, text) is
  'graphile-worker job key of a run output (or, for a null output, of the run''s deadline check).';

create function kiln_private.busy_slots(p_account_id uuid) returns int
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select (select count(*) from kiln_private.generations where account_id = p_account_id and status = 'processing')::int
       + (select count(*) from kiln_private.workflow_run_outputs where account_id = p_account_id and status = 'running')::int;
$$;
comment on function kiln_private.busy_slots(uuid) is
  'Parallel slots an account uses now: processing generations plus running workflow outputs.';

create function kiln_private.enqueue_workflow_outputs(p_run_id uuid, p_outputs text[], p_max_attempts int) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if coalesce(cardinality(p_outputs), 0) = 0 then
    return;
  end if;
  -- One call for the whole batch; the job key makes a duplicate enqueue collapse into one job.
  perform graphile_worker.add_jobs(array(
    select row('workflow__run_node', json_build_object('run', p_run_id, 'output', o), null, null,
               p_max_attempts::smallint, kiln_private.workflow_job_key(p_run_id, o), null, null)::graphile_worker.job_spec
    from unnest(p_outputs) o));
end;
$$;
comment on function kiln_private.enqueue_workflow_outputs(uuid, text[], int) is 'Queues workflow__run_node jobs for run outputs.';

create function kiln_private.wake_workflow_output(p_account_id uuid) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_next record;
begin
  select o.run_id, o.output_node_id, r.max_attempts into v_next
    from kiln_private.workflow_run_outputs o join kiln_private.workflow_runs r on r.id = o.run_id
    where o.account_id = p_account_id and o.waiting
    order by o.updated_at
    limit 1;
  if found then
    -- Same job key: moves the waiting job's run_at to now instead of adding a second job.
    perform graphile_worker.add_job('workflow__run_node', json_build_object('run', v_next.run_id, 'output', v_next.output_node_id),
                                    job_key => kiln_private.workflow_job_key(v_next.run_id, v_next.output_node_id),
                                    max_attempts => v_next.max_attempts);
  end if;
  -- Slots are shared with generations: a slot-waiting generation may take it instead.
  perform kiln_private.nudge_waiting_generation(p_account_id);
end;
$$;
comment on function kiln_private.wake_workflow_output(uuid) is
  'Runs the oldest slot-waiting workflow output (and generation) of an account now (called when a slot frees).';

create function kiln_private.abandon_workflow_outputs(p_run_id uuid, p_outputs text[]) returns int
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_out record;
  v_n int := 0;
begin
  -- Not started (or between retries): never run, and nothing is charged.
  for v_out in
    select output_node_id, charge_id from kiln_private.workflow_run_outputs
      where run_id = p_run_id and status in ('waiting', 'queued')
        and (p_outputs is null or output_node_id = any (p_outputs))
      for update
  loop
    if v_out.charge_id is not null then
      perform kiln.release_charge(v_out.charge_id);
    end if;
    update kiln_private.workflow_run_outputs
      set status = 'abandoned', waiting = false, finished_at = clock_timestamp(), updated_at = now()
      where run_id = p_run_id and output_node_id = v_out.output_node_id;
    v_n := v_n + 1;
  end loop;
  return v_n;
end;
$$;
comment on function kiln_private.abandon_workflow_outputs(uuid, text[]) is
  'Marks not-started outputs of a run (all, or the given ones) abandoned, releasing any reservation. Returns how many.';

create function kiln_private.write_back_workflow_run(p_run_id uuid) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
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
  update kiln_private.workflows w
    set graph = jsonb_set(w.graph, '{nodes}', (
          select jsonb_agg(case when d.result is not null then e.n || jsonb_build_object('result', d.result) else e.n end order by e.i)
          from jsonb_array_elements(w.graph->'nodes') with ordinality as e(n, i)
          left join done d on e.n->>'kind' = 'output' and d.output_node_id = e.n->>'id')),
        updated_at = now()
    from kiln_private.workflow_runs r
    where r.id = p_run_id and w.id = r.workflow_id
      and jsonb_typeof(w.graph->'nodes') = 'array'
      -- Only output nodes that still exist in the saved graph receive a result.
      and exists (select 1 from jsonb_array_elements(w.graph->'nodes') n join done d
                  on n->>'kind' = 'output' and d.output_node_id = n->>'id');
$$;
comment on function kiln_private.write_back_workflow_run(uuid) is
  'Writes a completed run''s outputs onto the saved workflow''s output nodes that still exist (an update: bumps updated_at).';

create function kiln_private.fail_workflow_run(p_run_id uuid, p_error text) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln_private.fail_workflow_run(uuid, text) is
  'Fails a pending or running run with a client-safe message and abandons its not-started outputs.';

create function kiln_private.note_workflow_progress(p_run_id uuid, p_settled int) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln_private.note_workflow_progress(uuid, int) is
  'Counts newly settled outputs; completes the run (with write-back) when all settled without failure.';

create function kiln.start_workflow_run(
  p_account_id uuid,
  p_key_id uuid,
  p_workspace_id uuid,
  p_origin text,
  p_workflow_id uuid,
  p_snapshot jsonb,
  p_outputs jsonb,
  p_window_seconds int,
  p_max_attempts int
) returns uuid
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_usage json;
  v_id uuid := gen_random_uuid();
  v_deadline timestamptz := now() + make_interval(secs => p_window_seconds);
  v_total int;
  v_skipped int;
  v_ready text[];
begin
  perform 1 from kiln_private.workflows where id = p_workflow_id and account_id = p_account_id;
  if not found then
    raise exception 'workflow not found' using errcode = 'KN001';
  end if;
  -- Refuse a run that could not charge a single output (every output reserves again as it starts).
  v_usage := kiln.get_usage(p_account_id, p_workspace_id);
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

  insert into kiln_private.workflow_runs
    (id, workflow_id, account_id, key_id, workspace_id, origin, snapshot, total, deadline, window_seconds, max_attempts)
  values
    (v_id, p_workflow_id, p_account_id, p_key_id, p_workspace_id, p_origin, p_snapshot,
     jsonb_array_length(p_outputs), v_deadline, p_window_seconds, p_max_attempts);

  insert into kiln_private.workflow_run_outputs
    (run_id, output_node_id, prompt_node_id, account_id, ordinal, type, spec, refs, pending_deps, dependents, status, finished_at)
  select v_id, u.output, u.prompt, p_account_id, u.ordinal, u.type, u.spec, u.refs, u.deps, u.dependents,
         case when u.type = 'video' then 'skipped' when u.deps = 0 then 'queued' else 'waiting' end,
         case when u.type = 'video' then clock_timestamp() end
  from jsonb_to_recordset(p_outputs) as u(output text, prompt text, ordinal int, type text, spec jsonb, refs text[], deps int, dependents text[]);

  select count(*), count(*) filter (where status = 'skipped'), array_agg(output_node_id order by ordinal) filter (where status = 'queued')
    into v_total, v_skipped, v_ready
    from kiln_private.workflow_run_outputs where run_id = v_id;

  perform kiln_private.enqueue_workflow_outputs(v_id, v_ready, p_max_attempts);
  perform graphile_worker.add_job('workflow__run_node', json_build_object('run', v_id, 'deadline', true),
                                  run_at => v_deadline, job_key => kiln_private.workflow_job_key(v_id, null), max_attempts => 10);
  -- Skipped (video) outputs settle at once; a run with nothing to execute completes here.
  perform kiln_private.note_workflow_progress(v_id, v_skipped);
  return v_id;
exception
  when check_violation or not_null_violation or invalid_text_representation or unique_violation then
    raise exception 'invalid run plan' using errcode = 'KI001';
end;
$$;
comment on function kiln.start_workflow_run(uuid, uuid, uuid, text, uuid, jsonb, jsonb, int, int) is
  'Starts a run in one transaction: checks ownership and that the caller can be charged (KN001, KQ001, KP001), stores the snapshot and the outputs with their dependency counts, and queues the ready outputs plus the run-window deadline check.';

create function kiln.start_workflow_output(
  p_run_id uuid,
  p_output_id text,
  p_worker_id text,
  p_job_id bigint,
  p_stale_seconds int,
  p_wait_ms int
) returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_run kiln_private.workflow_runs;
  v_out kiln_private.workflow_run_outputs;
  v_account kiln_private.accounts;
  v_slots int;
  v_now timestamptz := clock_timestamp();
  v_n int;
begin
  -- Lock order everywhere: run, then its outputs.
  select * into v_run from kiln_private.workflow_runs where id = p_run_id for update;
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  select * into v_out from kiln_private.workflow_run_outputs
    where run_id = p_run_id and output_node_id = p_output_id for update;
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  if v_out.status in ('completed', 'failed', 'skipped', 'abandoned') then
    return json_build_object('outcome', 'done', 'status', v_out.status);
  end if;
  if v_out.status = 'waiting' then
    return json_build_object('outcome', 'not_ready'); -- a stray job: its upstream will enqueue it
  end if;

  if v_out.status = 'running' then
    if v_out.worker_id = p_worker_id and v_out.job_id = p_job_id then
      null; -- the same job again: carry on
    elsif v_out.worker_id is not null
          and kiln_private.worker_alive(v_out.worker_id, p_stale_seconds)
          and exists (select 1 from graphile_worker._private_jobs j
                      where j.id = v_out.job_id and j.locked_by = v_out.worker_id) then
      return json_build_object('outcome', 'busy'); -- a live worker runs it: never run it twice
    end if;
    -- Otherwise its worker died (or let go of the job): take it over; the slot is already held.
  else
    if v_run.status in ('completed', 'failed') then
      v_n := kiln_private.abandon_workflow_outputs(p_run_id, array[p_output_id]);
      update kiln_private.workflow_runs set abandoned = abandoned + v_n where id = p_run_id;
      perform kiln_private.note_workflow_progress(p_run_id, 0);
      return json_build_object('outcome', 'done', 'status', 'abandoned');
    end if;
    if v_out.attempts = 0 and v_now > v_run.deadline then
      perform kiln.expire_workflow_run(p_run_id, p_stale_seconds);
      return json_build_object('outcome', 'done', 'status', 'failed');
    end if;
    -- Take one of the account's parallel slots (shared with generations), or wait for one.
    perform pg_advisory_xact_lock(hashtextextended('kiln.slots:' || v_out.account_id::text, 0));
    select * into v_account from kiln_private.accounts where id = v_out.account_id;
    if v_account.tier = 'blocked' then
      perform kiln.fail_workflow_output(p_run_id, p_output_id, 'insufficient_quota: this account cannot run generations');
      return json_build_object('outcome', 'done', 'status', 'failed');
    end if;
    select coalesce(v_account.parallel_slots, t.parallel_slots) into v_slots
      from kiln_private.tiers t where t.tier = v_account.tier;
    if kiln_private.busy_slots(v_out.account_id) >= v_slots then
      update kiln_private.workflow_run_outputs set waiting = true, updated_at = now()
        where run_id = p_run_id and output_node_id = p_output_id;
      perform graphile_worker.add_job('workflow__run_node', json_build_object('run', p_run_id, 'output', p_output_id),
                                      run_at => now() + make_interval(secs => p_wait_ms / 1000.0),
                                      job_key => kiln_private.workflow_job_key(p_run_id, p_output_id),
                                      max_attempts => v_run.max_attempts);
      return json_build_object('outcome', 'wait');
    end if;
  end if;

  update kiln_private.workflow_run_outputs
    set status = 'running', waiting = false, attempts = attempts + 1, worker_id = p_worker_id, job_id = p_job_id,
        started_at = coalesce(started_at, v_now), updated_at = now()
    where run_id = p_run_id and output_node_id = p_output_id
    returning * into v_out;
  if v_run.status = 'pending' then
    update kiln_private.workflow_runs set status = 'running', started_at = v_now, updated_at = now() where id = p_run_id;
  end if;
  return json_build_object(
    'outcome', 'run',
    'attempt', v_out.attempts,
    'max_attempts', v_run.max_attempts,
    'account_id', v_run.account_id,
    'spec', v_out.spec,
    'charge_id', v_out.charge_id,
    'reserved_micros', v_out.reserved_micros,
    'upstream', (select coalesce(json_object_agg(u.output_node_id, u.result), '{}'::json)
                 from kiln_private.workflow_run_outputs u
                 where u.run_id = p_run_id and u.output_node_id = any (v_out.refs) and u.status = 'completed'));
end;
$$;
comment on function kiln.start_workflow_output(uuid, text, text, bigint, int, int) is
  'Moves a run output to running for a worker''s job, respecting the account''s parallel slots and the run window (outcome run, with the spec and upstream results), or says why not: wait (slots full; re-queued), busy (a live worker runs it), done (settled, abandoned or expired), not_ready, missing.';

create function kiln.reserve_workflow_output(p_run_id uuid, p_output_id text, p_amount_micros bigint) returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_run kiln_private.workflow_runs;
  v_out kiln_private.workflow_run_outputs;
  v_charge kiln_private.charges;
begin
  select * into v_run from kiln_private.workflow_runs where id = p_run_id;
  select * into v_out from kiln_private.workflow_run_outputs
    where run_id = p_run_id and output_node_id = p_output_id for update;
  if not found or v_out.status <> 'running' then
    return json_build_object('ok', false);
  end if;
  if v_out.charge_id is not null then
    -- Idempotent: a retry or takeover keeps the first reservation.
    return json_build_object('ok', true, 'reserved_micros', v_out.reserved_micros);
  end if;
  -- Raises KQ001 / KP001 when the budget cannot cover the worst case.
  v_charge := kiln.reserve_budget(v_run.account_id, v_run.workspace_id, v_run.key_id, v_out.spec->'model'->>'id', 'workflow',
                                  p_amount_micros, null, p_run_id, p_output_id);
  update kiln_private.workflow_run_outputs
    set charge_id = v_charge.id, reserved_micros = v_charge.reserved_micros, updated_at = now()
    where run_id = p_run_id and output_node_id = p_output_id;
  return json_build_object('ok', true, 'reserved_micros', v_charge.reserved_micros);
end;
$$;
comment on function kiln.reserve_workflow_output(uuid, text, bigint) is
  'Reserves the worst-case cost of a running output once (idempotent) on the run''s budget pool; raises KQ001 or KP001 when it cannot.';

create function kiln.complete_workflow_output(p_run_id uuid, p_output_id text, p_result jsonb, p_cost_micros bigint, p_provider_request_id text)
  returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_run kiln_private.workflow_runs;
  v_out kiln_private.workflow_run_outputs;
  v_charge kiln_private.charges;
  v_ready text[];
begin
  select * into v_run from kiln_private.workflow_runs where id = p_run_id for update;
  select * into v_out from kiln_private.workflow_run_outputs
    where run_id = p_run_id and output_node_id = p_output_id for update;
  if not found then
    raise exception 'workflow output not found' using errcode = 'KN001';
  end if;
  if v_out.status not in ('running', 'queued') or v_out.charge_id is null then
    -- Idempotent: a duplicated or retried job finds the first outcome in place.
    return json_build_object('applied', false, 'status', v_out.status);
  end if;
  v_charge := kiln.settle_charge(v_out.charge_id, p_cost_micros);
  update kiln_private.workflow_run_outputs
    set status = 'completed', result = p_result, cost_micros = coalesce(v_charge.settled_micros, 0),
        provider_request_id = left(p_provider_request_id, 200), waiting = false,
        finished_at = clock_timestamp(), updated_at = now()
    where run_id = p_run_id and output_node_id = p_output_id;

  if v_run.status in ('pending', 'running') and cardinality(v_out.dependents) > 0 then
    -- Every dependent loses one pending dependency; those reaching zero are queued, all in this transaction.
    with dec as (
      update kiln_private.workflow_run_outputs
        set pending_deps = pending_deps - 1,
            status = case when pending_deps = 1 then 'queued' else status end,
            updated_at = now()
        where run_id = p_run_id and output_node_id = any (v_out.dependents) and status = 'waiting'
        returning output_node_id, status, ordinal
    )
    select array_agg(output_node_id order by ordinal) filter (where status = 'queued') into v_ready from dec;
    perform kiln_private.enqueue_workflow_outputs(p_run_id, v_ready, v_run.max_attempts);
  end if;

  perform kiln_private.note_workflow_progress(p_run_id, 1);
  perform kiln_private.wake_workflow_output(v_out.account_id);
  return json_build_object('applied', true, 'cost_micros', v_charge.settled_micros, 'queued', coalesce(cardinality(v_ready), 0));
end;
$$;
comment on function kiln.complete_workflow_output(uuid, text, jsonb, bigint, text) is
  'Settles an output at its actual cost, records its result, decrements its dependents and queues those that reach zero, in one call. Idempotent: only the first completion applies.';

create function kiln.fail_workflow_output(p_run_id uuid, p_output_id text, p_error text) returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_run kiln_private.workflow_runs;
  v_out kiln_private.workflow_run_outputs;
  v_error text := left(coalesce(nullif(p_error, ''), 'generation failed'), 1000);
begin
  select * into v_run from kiln_private.workflow_runs where id = p_run_id for update;
  select * into v_out from kiln_private.workflow_run_outputs
    where run_id = p_run_id and output_node_id = p_output_id for update;
  if not found then
    raise exception 'workflow output not found' using errcode = 'KN001';
  end if;
  if v_out.status not in ('running', 'queued', 'waiting') then
    return json_build_object('applied', false, 'status', v_out.status);
  end if;
  if v_out.charge_id is not null then
    perform kiln.release_charge(v_out.charge_id);
  end if;
  update kiln_private.workflow_run_outputs
    set status = 'failed', error = v_error, waiting = false, finished_at = clock_timestamp(), updated_at = now()
    where run_id = p_run_id and output_node_id = p_output_id;
  perform kiln_private.fail_workflow_run(p_run_id,
    format('output "%s" of prompt "%s" failed: %s', left(p_output_id, 200), left(v_out.prompt_node_id, 200), v_error));
  perform kiln_private.note_workflow_progress(p_run_id, 1);
  if v_out.status = 'running' then
    perform kiln_private.wake_workflow_output(v_out.account_id);
  end if;
  return json_build_object('applied', true);
end;
$$;
comment on function kiln.fail_workflow_output(uuid, text, text) is
  'Fails an output with a client-safe message and releases its reservation; the run fails at its first failed output and its not-started outputs are abandoned. Idempotent.';

create function kiln.defer_workflow_output(p_run_id uuid, p_output_id text, p_worker_id text, p_job_id bigint, p_error text)
  returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_account uuid;
begin
  update kiln_private.workflow_run_outputs
    set status = 'queued', worker_id = null, job_id = null, last_error = left(p_error, 1000), updated_at = now()
    where run_id = p_run_id and output_node_id = p_output_id and status = 'running'
      and worker_id = p_worker_id and job_id = p_job_id
    returning account_id into v_account;
  if found then
    perform kiln_private.wake_workflow_output(v_account);
  end if;
  return json_build_object('applied', found);
end;
$$;
comment on function kiln.defer_workflow_output(uuid, text, text, bigint, text) is
  'A transient failure: back to queued (freeing the slot, keeping the reservation) until the job''s retry. Only the lease holder may defer.';

create function kiln.expire_workflow_run(p_run_id uuid, p_stale_seconds int) returns json
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
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
    perform graphile_worker.add_job('workflow__run_node', json_build_object('run', p_run_id, 'deadline', true),
                                    run_at => v_run.deadline, job_key => kiln_private.workflow_job_key(p_run_id, null), max_attempts => 10);
    return json_build_object('open', true);
  end if;

  -- Outputs ready to run but never started within the window fail; the run fails with them.
  for v_late in
    select output_node_id, prompt_node_id from kiln_private.workflow_run_outputs
      where run_id = p_run_id and status = 'queued' and attempts = 0
      order by ordinal
      for update
  loop
    v_first := coalesce(v_first, format('prompt "%s" → output "%s"', left(v_late.prompt_node_id, 200), left(v_late.output_node_id, 200)));
    update kiln_private.workflow_run_outputs
      set status = 'failed', waiting = false, finished_at = clock_timestamp(), updated_at = now(),
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
    select o.output_node_id from kiln_private.workflow_run_outputs o
      where o.run_id = p_run_id and o.status in ('queued', 'running')
        and (o.worker_id is null or not kiln_private.worker_alive(o.worker_id, p_stale_seconds))
        and not exists (
          select 1 from graphile_worker._private_jobs j
            where j.key = kiln_private.workflow_job_key(p_run_id, o.output_node_id)
              and (j.locked_at is not null or j.attempts < j.max_attempts))
        and not exists (
          select 1 from graphile_worker._private_jobs j where j.id = o.job_id and j.locked_by is not null)
  loop
    perform kiln.fail_workflow_output(p_run_id, v_stuck.output_node_id, 'the output could not be completed; nothing was charged');
    v_stuck_n := v_stuck_n + 1;
  end loop;

  select * into v_run from kiln_private.workflow_runs where id = p_run_id;
  if v_run.settled + v_run.abandoned < v_run.total then
    -- Outputs still in flight: check again later (a dead worker's outputs are then taken over or failed).
    perform graphile_worker.add_job('workflow__run_node', json_build_object('run', p_run_id, 'deadline', true),
                                    run_at => now() + make_interval(secs => greatest(p_stale_seconds, 5)),
                                    job_key => kiln_private.workflow_job_key(p_run_id, null), max_attempts => 10);
  end if;
  return json_build_object('open', v_run.settled + v_run.abandoned < v_run.total, 'late', v_late_n, 'stuck', v_stuck_n);
end;
$$;
comment on function kiln.expire_workflow_run(uuid, int) is
  'The run-window check: after the deadline, outputs not started fail the run (with a message saying so), and outputs no job can finish any more are failed; re-checks later while outputs are in flight.';

create function kiln.get_workflow_run(p_account_id uuid, p_workflow_id uuid, p_run_id uuid) returns json
  language sql stable
  security definer
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
    -- Past its window with outputs never started: the reader runs the window check first.
    'expired', r.status in ('pending', 'running') and now() > r.deadline and exists (
      select 1 from kiln_private.workflow_run_outputs o
      where o.run_id = r.id and (o.status = 'waiting' or (o.status = 'queued' and o.attempts = 0))),
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
comment on function kiln.get_workflow_run(uuid, uuid, uuid) is
  'A run''s state and its settled results (in settling order) for its owner, when it belongs to that workflow; null otherwise.';

--------------------------------------------------------------------------------
-- Analyst view (UTC days). Money in integer microdollars.

create view kiln.daily_workflow_runs as
  select
    (r.created_at at time zone 'UTC')::date as day,
    r.account_id,
    r.workspace_id,
    r.key_id,
    r.origin,
    count(*) as runs,
    count(*) filter (where r.status = 'completed') as completed,
    count(*) filter (where r.status = 'failed') as failed,
    count(*) filter (where r.status in ('pending', 'running')) as in_flight,
    coalesce(sum(r.total), 0)::bigint as outputs,
    coalesce(sum((select coalesce(sum(o.cost_micros), 0) from kiln_private.workflow_run_outputs o where o.run_id = r.id)), 0)::bigint as cost_micros,
    percentile_cont(0.5) within group (order by extract(epoch from r.completed_at - r.created_at) * 1000)
      filter (where r.status = 'completed') as duration_p50_ms
  from kiln_private.workflow_runs r
  group by 1, 2, 3, 4, 5;
comment on view kiln.daily_workflow_runs is
  'Workflow runs per UTC day (of creation), account, workspace (null = personal budget), API key and origin: totals by outcome, outputs, billed cost in microdollars and the median enqueue → completed time.';
