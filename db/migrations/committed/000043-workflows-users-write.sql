--! Previous: sha1:76613b78a8a533f7fb72ec4b673d4ecdea27bbbb
--! Hash: sha1:2b6b983578ee98c383b42939e5c5afe29cb96ef9
--! Message: Workflows users can write: owned by a billing scope, versioned, soft-deleted, saved and deleted as events

--! split: 1-current.sql
-- Issue 28: workflows that users write over REST and MCP.
--
-- A workflow is owned by a billing scope: the workspace of a workspace-bound key (or MCP identity),
-- else the account (scope_id, as webhooks and events already are). Every save bumps `version`,
-- which is also the ETag; If-Match is checked here (KV001 → 412 precondition_failed). A delete is
-- soft: the workflow leaves lists and is not runnable, its runs stay readable by id. A run's
-- write-back changes the graph and updated_at, never the version. Every save and delete is an
-- event on the scope's stream (workflow.saved, workflow.deleted), from a trigger, so every path
-- that saves (REST, MCP, the operator's import) emits it.

alter table kiln_private.workflows add column if not exists version bigint not null default 1;
alter table kiln_private.workflows add column if not exists deleted_at timestamptz;
alter table kiln_private.workflows add column if not exists scope_id uuid generated always as (coalesce(workspace_id, account_id)) stored;
do $$ begin
  alter table kiln_private.workflows add constraint workflows_version_check check (version >= 1);
exception when duplicate_object then null;
end $$;
comment on column kiln_private.workflows.version is 'Bumped by every save (create = 1, replace); the API''s ETag. A run''s write-back does not change it.';
comment on column kiln_private.workflows.deleted_at is 'Set by kiln.delete_workflow: the workflow leaves lists and cannot run; its runs stay readable.';
comment on column kiln_private.workflows.scope_id is 'The owner: the workspace when saved through a workspace-bound key or identity, else the account.';
comment on table kiln_private.workflows is 'Saved workflow graphs, one owner (billing scope) each.';
drop index if exists kiln_private.workflows_account_updated_idx;
create index if not exists workflows_scope_updated_idx on kiln_private.workflows (scope_id, updated_at desc, id desc) where deleted_at is null;

create or replace function kiln_private.workflow_scope(p_account_id uuid, p_workspace_id uuid)
returns uuid
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  select case
    when p_workspace_id is null then p_account_id
    when exists (select 1 from kiln_private.workspace_members m
                 where m.workspace_id = p_workspace_id and m.account_id = p_account_id and m.left_at is null) then p_workspace_id
  end;
$$;
comment on function kiln_private.workflow_scope(uuid, uuid) is 'The scope whose workflows a caller reaches: the workspace of a workspace-bound key or identity while its account is a member, the account for a personal one; null (no workflow at all) for a member who left.';

create or replace function kiln_private.check_workflow_version(p_version bigint, p_if_versions bigint[])
returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
  if p_if_versions is not null and not (p_version = any (p_if_versions)) then
    raise exception 'the workflow has changed since that version: it is now version %; read it again and reapply your change, or save without If-Match to overwrite it', p_version
      using errcode = 'KV001';
  end if;
end;
$$;
comment on function kiln_private.check_workflow_version(bigint, bigint[]) is 'If-Match: KV001 unless the workflow''s version is one of p_if_versions (null = no condition, e.g. "*" or no header).';

create or replace function kiln.create_workflow(p_account_id uuid, p_workspace_id uuid, p_name text, p_graph jsonb)
returns kiln_private.workflows
language plpgsql volatile security definer
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
comment on function kiln.create_workflow(uuid, uuid, text, jsonb) is 'Saves a new workflow, version 1, owned by the workspace when p_workspace_id is given (KF001 unless the account is a member of it), else by the account; the graph is validated by the caller. Emits workflow.saved (trigger).';

drop function if exists kiln.get_workflow(uuid, uuid);
create or replace function kiln.get_workflow(p_id uuid, p_account_id uuid, p_workspace_id uuid)
returns setof kiln_private.workflows
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select w.* from kiln_private.workflows w
  where w.id = p_id and w.deleted_at is null
    and (p_account_id is null or w.scope_id = kiln_private.workflow_scope(p_account_id, p_workspace_id));
$$;
comment on function kiln.get_workflow(uuid, uuid, uuid) is 'One workflow that is not deleted, with its stored graph (outputs written back by runs included), when it belongs to the caller''s scope (kiln_private.workflow_scope); p_account_id null = operator access.';

create or replace function kiln.get_workflows_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_ids uuid[])
returns table(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
language sql volatile security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
  select r.*, case when r.status = 'ok' then (select to_json(w) from kiln.get_workflow(p_ids[r.ord], r.account_id, r.workspace_id) w) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$$;
comment on function kiln.get_workflows_for_keys(bytea[], integer, uuid[]) is 'GET /workflows/{id} for a batch in one transaction: authorizes each key (read scope, the per-key read bucket and the key''s own rpm) and, when admitted, returns that workflow of the key''s scope as its row in JSON (kiln.get_workflow; null body when there is none).';

create or replace function kiln.lock_workflow(p_account_id uuid, p_workspace_id uuid, p_id uuid, p_if_versions bigint[])
returns kiln_private.workflows
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_row kiln_private.workflows;
begin
  select w.* into v_row from kiln_private.workflows w
    where w.id = p_id and w.deleted_at is null
      and (p_account_id is null or w.scope_id = kiln_private.workflow_scope(p_account_id, p_workspace_id))
    for update;
  if not found then
    raise exception 'workflow not found' using errcode = 'KN001';
  end if;
  perform kiln_private.check_workflow_version(v_row.version, p_if_versions);
  return v_row;
end;
$$;
comment on function kiln.lock_workflow(uuid, uuid, uuid, bigint[]) is 'Locks a workflow of the caller''s scope for the rest of the transaction (a save reads the stored graph, keeps its written-back results and validates before it writes; a run''s write-back waits). KN001 when absent, deleted or another scope''s; KV001 when If-Match (p_if_versions) names another version. p_account_id null = operator access.';

create or replace function kiln.replace_workflow(p_account_id uuid, p_workspace_id uuid, p_id uuid, p_name text, p_graph jsonb, p_if_versions bigint[])
returns kiln_private.workflows
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln.replace_workflow(uuid, uuid, uuid, text, jsonb, bigint[]) is 'Replaces a workflow''s graph (and name; null keeps it): version + 1, updated_at now; emits workflow.saved (trigger). Runs already started keep their snapshot. KN001 / KV001 as kiln.lock_workflow; the graph is validated by the caller.';

drop function if exists kiln.update_workflow(uuid, jsonb, text);

create or replace function kiln.delete_workflow(p_account_id uuid, p_workspace_id uuid, p_id uuid, p_if_versions bigint[])
returns kiln_private.workflows
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_row kiln_private.workflows;
begin
  perform kiln.lock_workflow(p_account_id, p_workspace_id, p_id, p_if_versions);
  update kiln_private.workflows set deleted_at = now() where id = p_id returning * into v_row;
  return v_row;
end;
$$;
comment on function kiln.delete_workflow(uuid, uuid, uuid, bigint[]) is 'Deletes a workflow of the caller''s scope (soft: deleted_at): it leaves lists and GET, cannot run or be retried; runs already started finish and stay readable by id. Emits workflow.deleted (trigger). KN001 / KV001 as kiln.lock_workflow.';

create or replace function kiln_private.workflow_event_data(w kiln_private.workflows)
returns json
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  select json_build_object(
    'id', w.id, 'name', w.name, 'version', w.version,
    'createdAt', to_char(w.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'updatedAt', to_char(w.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'deletedAt', to_char(w.deleted_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
$$;
comment on function kiln_private.workflow_event_data(kiln_private.workflows) is 'The data of a workflow.saved / workflow.deleted event: the workflow without its graph (id, name, version, createdAt, updatedAt, deletedAt).';

create or replace function kiln_private.tg_workflows__outbox()
returns trigger
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln_private.tg_workflows__outbox() is 'Trigger: a save (insert, or a new version) emits workflow.saved, a delete workflow.deleted, to the workflow''s scope; a run''s write-back (graph only) emits nothing.';
drop trigger if exists tg_workflows__outbox on kiln_private.workflows;
create trigger tg_workflows__outbox after insert or update of version, deleted_at on kiln_private.workflows
  for each row execute function kiln_private.tg_workflows__outbox();

drop function if exists kiln.list_workflows_for_keys(bytea[], integer, integer[], integer[]);
drop function if exists kiln.list_workflows(uuid, integer, integer);
create or replace function kiln.list_workflows(p_account_id uuid, p_workspace_id uuid, p_limit integer, p_offset integer)
returns json
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_scope uuid := kiln_private.workflow_scope(p_account_id, p_workspace_id);
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
          where scope_id = v_scope and deleted_at is null
          order by updated_at desc, id desc
          limit p_limit offset p_offset) w);
end;
$$;
comment on function kiln.list_workflows(uuid, uuid, integer, integer) is 'The workflow summaries (id, name, updated_at) of the caller''s scope (kiln_private.workflow_scope), deleted ones left out, most recently updated first. KI001 for a limit outside 1–100 or a negative offset.';

create or replace function kiln.list_workflows_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_limits integer[], p_offsets integer[])
returns table(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
language sql volatile security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
  select r.*, case when r.status = 'ok' then kiln.list_workflows(r.account_id, r.workspace_id, p_limits[r.ord], p_offsets[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$$;
comment on function kiln.list_workflows_for_keys(bytea[], integer, integer[], integer[]) is 'GET /workflows for a batch in one transaction: authorizes each key (read scope, the per-key read bucket at p_read_rpm and the key''s own rpm) and, when admitted, returns that page of the key''s scope''s workflows (kiln.list_workflows).';

drop function if exists kiln.list_workflow_runs_for_keys(bytea[], integer, uuid[], integer[], integer[]);
drop function if exists kiln.list_workflow_runs(uuid, uuid, integer, integer);
create or replace function kiln.list_workflow_runs(p_account_id uuid, p_workspace_id uuid, p_workflow_id uuid, p_limit integer, p_offset integer)
returns json
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  -- A deleted workflow's runs stay listed: they remain readable.
  select case when exists (select 1 from kiln_private.workflows w
                           where w.id = p_workflow_id and w.scope_id = kiln_private.workflow_scope(p_account_id, p_workspace_id)) then (
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
comment on function kiln.list_workflow_runs(uuid, uuid, uuid, integer, integer) is 'A page of the account''s runs of a workflow of its scope (deleted or not), newest first (id, status, progress, createdAt, completedAt, retryOf); null when the workflow is not the scope''s.';

create or replace function kiln.list_workflow_runs_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_workflow_ids uuid[], p_limits integer[], p_offsets integer[])
returns table(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
language sql volatile security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
  select r.*, case when r.status = 'ok' then kiln.list_workflow_runs(r.account_id, r.workspace_id, p_workflow_ids[r.ord], p_limits[r.ord], p_offsets[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$$;
comment on function kiln.list_workflow_runs_for_keys(bytea[], integer, uuid[], integer[], integer[]) is 'GET /workflows/{id}/runs for a batch in one transaction: authorizes each key (read scope, the per-key read bucket and the key''s own rpm) and, when admitted, returns that page of runs (kiln.list_workflow_runs; null body when the workflow is not the key''s scope''s).';

drop function if exists kiln.snapshot_workflow(uuid, uuid);
create or replace function kiln.snapshot_workflow(p_account_id uuid, p_workspace_id uuid, p_id uuid)
returns table(graph jsonb, models json)
language sql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
  -- FOR SHARE: an edit cannot commit between this read and the run insert of the same transaction.
  select w.graph,
         (select coalesce(json_agg(m), '[]'::json) from kiln.models m where m.enabled)
  from (select * from kiln_private.workflows
        where id = p_id and deleted_at is null and scope_id = kiln_private.workflow_scope(p_account_id, p_workspace_id)
        for share) w;
$$;
comment on function kiln.snapshot_workflow(uuid, uuid, uuid) is 'The graph of a workflow of the caller''s scope that is not deleted, locked until the end of the transaction, plus the enabled catalog: what a run snapshots.';

CREATE OR REPLACE FUNCTION kiln.start_workflow_run(p_account_id uuid, p_key_id uuid, p_workspace_id uuid, p_origin text, p_workflow_id uuid, p_snapshot jsonb, p_outputs jsonb, p_window_seconds integer, p_max_attempts integer)
 RETURNS uuid
 LANGUAGE plpgsql
 VOLATILE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid := gen_random_uuid();
  v_deadline timestamptz := now() + make_interval(secs => p_window_seconds);
  v_skipped int;
  v_ready uuid[];
begin
  -- The workflow's owner is a billing scope (kiln_private.workflow_scope); a deleted one is not runnable.
  perform 1 from kiln_private.workflows
    where id = p_workflow_id and deleted_at is null and scope_id = kiln_private.workflow_scope(p_account_id, p_workspace_id);
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

CREATE OR REPLACE FUNCTION kiln.retry_workflow_run(p_account_id uuid, p_key_id uuid, p_workspace_id uuid, p_origin text, p_workflow_id uuid, p_run_id uuid, p_window_seconds integer, p_max_attempts integer)
 RETURNS uuid
 LANGUAGE plpgsql
 VOLATILE SECURITY DEFINER
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

CREATE OR REPLACE FUNCTION kiln_private.write_back_workflow_run(p_run_id uuid)
 RETURNS void
 LANGUAGE sql
 VOLATILE
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
