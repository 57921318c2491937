-- functions/kiln.retry_workflow_run.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.retry_workflow_run.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

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
  if v_old.end_user is null and exists (select 1 from kiln_private.api_keys k where k.id = p_key_id and k.require_end_user) then
    raise exception 'endUser: is required: this API key requires an end user (requireEndUser), and the run it retries has none' using errcode = 'KI002';
  end if;
  perform kiln_private.check_run_budget(p_account_id, p_workspace_id, v_old.end_user);

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
    (id, workflow_id, account_id, key_id, workspace_id, origin, snapshot, total, deadline, window_seconds, max_attempts, retry_of,
     end_user, metadata)
  values
    (v_id, v_old.workflow_id, p_account_id, p_key_id, p_workspace_id, p_origin, v_old.snapshot, v_old.total,
     v_deadline, p_window_seconds, p_max_attempts, p_run_id, v_old.end_user, v_old.metadata);

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
      (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, max_attempts, run_id, output_node_id, end_user, metadata)
    select p.gen_id, p_account_id, p_key_id, p_workspace_id, 'workflow', coalesce(p.spec->'model'->>'id', ''),
           case when p.type = 'image' then 'image' else 'code' end, p.spec, 0, p_max_attempts, v_id, p.output_node_id, v_old.end_user, v_old.metadata
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
comment on function kiln.retry_workflow_run(uuid,uuid,uuid,text,uuid,uuid,integer,integer) is 'Retries a failed run of the account''s workflow as a new run (retry_of = it) on the same snapshot, billed to the caller: completed and skipped outputs are reused (results copied, cost 0, never run or charged again), outputs of the old run still in flight are canceled, and every other output runs again once the inputs it reads are settled; the new run and its outputs keep the old run''s attribution (end_user, metadata). KN001 unknown run or deleted workflow, KT001 not failed or already retried, KQ001 / KP001 budget, KI002 a key made with requireEndUser retrying a run without an end user.';
