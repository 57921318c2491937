-- functions/kiln.start_workflow_run.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.start_workflow_run.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.start_workflow_run(p_account_id uuid, p_key_id uuid, p_workspace_id uuid, p_origin text, p_workflow_id uuid, p_snapshot jsonb, p_outputs jsonb, p_window_seconds integer, p_max_attempts integer, p_end_user text DEFAULT NULL::text, p_metadata jsonb DEFAULT NULL::jsonb)
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
  -- A key made with requireEndUser spends only for a named end user.
  if p_end_user is null and exists (select 1 from kiln_private.api_keys k where k.id = p_key_id and k.require_end_user) then
    raise exception 'endUser: is required: this API key requires an end user (requireEndUser)' using errcode = 'KI002';
  end if;
  -- Refuse a run that could not charge a single output (every output reserves as it starts).
  perform kiln_private.check_run_budget(p_account_id, p_workspace_id, p_end_user);

  insert into kiln_private.workflow_runs
    (id, workflow_id, account_id, key_id, workspace_id, origin, snapshot, total, deadline, window_seconds, max_attempts, end_user, metadata)
  values
    (v_id, p_workflow_id, p_account_id, p_key_id, p_workspace_id, p_origin, p_snapshot,
     jsonb_array_length(p_outputs), v_deadline, p_window_seconds, p_max_attempts, p_end_user, p_metadata);

  with units as (
    select u.*, case when u.type = 'video' then null else kiln_private.uuid_v7() end as gen_id
    from jsonb_to_recordset(p_outputs) as u(output text, prompt text, ordinal int, type text, spec jsonb, refs text[], deps int, dependents text[])
  ), gens as (
    insert into kiln_private.generations
      (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, max_attempts, run_id, output_node_id, end_user, metadata)
    select u.gen_id, p_account_id, p_key_id, p_workspace_id, 'workflow', coalesce(u.spec->'model'->>'id', ''),
           case when u.type = 'image' then 'image' else 'code' end, u.spec, 0, p_max_attempts, v_id, u.output, p_end_user, p_metadata
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
comment on function kiln.start_workflow_run(uuid,uuid,uuid,text,uuid,jsonb,jsonb,integer,integer,text,jsonb) is 'Starts a run in one transaction: checks that the workflow is the caller''s billing scope''s and not deleted, that the caller can be charged (KN001, KQ001, KP001) and that a key made with requireEndUser names an end user (KI002), stores the run''s attribution (p_end_user, p_metadata: its outputs inherit them), stores the snapshot, the outputs with their dependency counts and one generation (origin workflow) per output, and queues the ready ones plus the run-window check.';
