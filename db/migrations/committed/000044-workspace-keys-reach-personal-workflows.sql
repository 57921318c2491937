--! Previous: sha1:2b6b983578ee98c383b42939e5c5afe29cb96ef9
--! Hash: sha1:c276d6c916a1d3c96ca3c937bbc1a0a73610c814
--! Message: A workspace-bound key still reaches its account's personal workflows

--! split: 1-current.sql
-- Workflows a workspace-bound key reached before 000043 it still reaches: its account's personal
-- workflows. 000043 made the owner a billing scope (a workspace key saves into the workspace), and
-- with it a workspace key's GET /workflows/{id}, runs and list of its own account's personal
-- workflows turned from 200 into 404: a change of v1's answers to existing requests (the console's
-- own phone view, signed in with a workspace key, could no longer open a personal workflow). A
-- caller now reaches the workflows of its scope and, for a workspace-bound key or identity, those
-- of its own account too; never another account's or another workspace's. New workflows are
-- still saved into the caller's scope.

create or replace function kiln_private.workflow_scopes(p_account_id uuid, p_workspace_id uuid)
returns uuid[]
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  select array_remove(array[kiln_private.workflow_scope(p_account_id, p_workspace_id),
                            case when p_workspace_id is not null then p_account_id end], null);
$$;
comment on function kiln_private.workflow_scopes(uuid, uuid) is 'The scopes whose workflows a caller reaches: its own (kiln_private.workflow_scope) and, for a workspace-bound key or identity, its account''s personal ones (as before workflows had scopes); empty for nobody.';

create or replace function kiln.get_workflow(p_id uuid, p_account_id uuid, p_workspace_id uuid)
returns setof kiln_private.workflows
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select w.* from kiln_private.workflows w
  where w.id = p_id and w.deleted_at is null
    and (p_account_id is null or w.scope_id = any (kiln_private.workflow_scopes(p_account_id, p_workspace_id)));
$$;
comment on function kiln.get_workflow(uuid, uuid, uuid) is 'One workflow that is not deleted, with its stored graph (outputs written back by runs included), when it belongs to the caller''s scope (kiln_private.workflow_scopes); p_account_id null = operator access.';

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
      and (p_account_id is null or w.scope_id = any (kiln_private.workflow_scopes(p_account_id, p_workspace_id)))
    for update;
  if not found then
    raise exception 'workflow not found' using errcode = 'KN001';
  end if;
  perform kiln_private.check_workflow_version(v_row.version, p_if_versions);
  return v_row;
end;
$$;
comment on function kiln.lock_workflow(uuid, uuid, uuid, bigint[]) is 'Locks a workflow of the caller''s scope for the rest of the transaction (a save reads the stored graph, keeps its written-back results and validates before it writes; a run''s write-back waits). KN001 when absent, deleted or another scope''s; KV001 when If-Match (p_if_versions) names another version. p_account_id null = operator access.';

create or replace function kiln.list_workflows(p_account_id uuid, p_workspace_id uuid, p_limit integer, p_offset integer)
returns json
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln.list_workflows(uuid, uuid, integer, integer) is 'The workflow summaries (id, name, updated_at) of the caller''s scope (kiln_private.workflow_scopes), deleted ones left out, most recently updated first. KI001 for a limit outside 1–100 or a negative offset.';

create or replace function kiln.list_workflow_runs(p_account_id uuid, p_workspace_id uuid, p_workflow_id uuid, p_limit integer, p_offset integer)
returns json
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln.list_workflow_runs(uuid, uuid, uuid, integer, integer) is 'A page of the account''s runs of a workflow of its scope (deleted or not), newest first (id, status, progress, createdAt, completedAt, retryOf); null when the workflow is not the scope''s.';

create or replace function kiln.snapshot_workflow(p_account_id uuid, p_workspace_id uuid, p_id uuid)
returns table(graph jsonb, models json)
language sql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
  -- FOR SHARE: an edit cannot commit between this read and the run insert of the same transaction.
  select w.graph,
         (select coalesce(json_agg(m), '[]'::json) from kiln.models m where m.enabled)
  from (select * from kiln_private.workflows
        where id = p_id and deleted_at is null and scope_id = any (kiln_private.workflow_scopes(p_account_id, p_workspace_id))
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
