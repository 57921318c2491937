--! Previous: sha1:21827366119a2d83875514bd63935e8646e622fe
--! Hash: sha1:662f4c482ef3b975ab7bf35e414912fa4664ced6
--! Message: batches in groups, end-user budgets and usage by end user, metadata keyset

--! split: 1-current.sql
-- A run for an end user whose cap is used up is refused when it starts, as one whose budget is
-- (docs/usage.md, "Budgets per end user").
drop function if exists kiln_private.check_run_budget(uuid, uuid);
-- included from db/functions/kiln_private.check_run_budget.sql
-- functions/kiln_private.check_run_budget.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.check_run_budget.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.check_run_budget(p_account_id uuid, p_workspace_id uuid, p_end_user text)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_usage json := kiln.get_usage(p_account_id, p_workspace_id);
  v_cap json;
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
  -- The run's end user's cap, when it has one (docs/usage.md, "Budgets per end user").
  if p_end_user is not null then
    v_cap := kiln_private.end_user_budget_json(coalesce(p_workspace_id, p_account_id), p_end_user);
    if v_cap->>'budgetMicros' is not null and (v_cap->>'remainingMicros')::bigint <= 0 then
      raise exception 'end user "%"''s budget for this % is exhausted', p_end_user, v_cap->>'period' using errcode = 'KQ001';
    end if;
  end if;
end;
$function$;
comment on function kiln_private.check_run_budget(uuid,uuid,text) is 'Raises KQ001 / KP001 when a run started by this caller for this end user (or none) could not charge a single output (blocked tier, exhausted budget, the end user''s cap used up, Team plan not active or owner left).';
-- end of db/functions/kiln_private.check_run_budget.sql
-- included from db/functions/kiln.start_workflow_run.sql
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
-- end of db/functions/kiln.start_workflow_run.sql
-- included from db/functions/kiln.retry_workflow_run.sql
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
-- end of db/functions/kiln.retry_workflow_run.sql

-- GET /usage/daily reads through kiln.get_daily_usage_groups(_for_keys|_for_callers), with or
-- without groupBy: the ungrouped readers are gone.
drop function if exists kiln.get_daily_usage_for_keys(bytea[], integer, date[], date[]);
drop function if exists kiln.get_daily_usage_for_callers(uuid[], uuid[], date[], date[]);

-- GET /generations?metadata[k]=v: a keyset page read from a btree, not a GIN bitmap of every
-- matching generation sorted (docs/api.md, "Attribution"). One row per metadata pair, written
-- when the generation is (metadata never changes), gone with it.
create table if not exists kiln_private.generation_tags (
  generation_id uuid not null references kiln_private.generations (id) on delete cascade,
  account_id uuid not null,
  pool_id uuid not null,
  origin text not null,
  mkey text not null,
  mvalue text not null,
  created_at timestamptz not null,
  primary key (generation_id, mkey)
);
comment on table kiln_private.generation_tags is 'One row per metadata pair of a generation (kiln_private.tg_generations__tags), for GET /generations?metadata[k]=v in keyset order (generation_tags_list_idx).';
create index if not exists generation_tags_list_idx
  on kiln_private.generation_tags (account_id, pool_id, origin, mkey, mvalue, created_at, generation_id);
insert into kiln_private.generation_tags (generation_id, account_id, pool_id, origin, mkey, mvalue, created_at)
  select g.id, g.account_id, coalesce(g.workspace_id, g.account_id), g.origin, m.key, m.value, g.created_at
  from kiln_private.generations g cross join lateral jsonb_each_text(g.metadata) m
  where g.metadata is not null
  on conflict do nothing;
-- included from db/functions/kiln_private.tg_generations__tags.sql
-- functions/kiln_private.tg_generations__tags.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_generations__tags.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_generations__tags()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- One row per metadata pair of the generations just inserted, set-based (metadata never
  -- changes after creation): GET /generations?metadata[k]=v reads them in keyset order.
  insert into kiln_private.generation_tags (generation_id, account_id, pool_id, origin, mkey, mvalue, created_at)
  select n.id, n.account_id, coalesce(n.workspace_id, n.account_id), n.origin, m.key, m.value, n.created_at
  from new_rows n cross join lateral jsonb_each_text(n.metadata) m
  where n.metadata is not null;
  return null;
end;
$function$;
comment on function kiln_private.tg_generations__tags() is 'Trigger (after insert, per statement): writes kiln_private.generation_tags, one row per metadata pair of each generation inserted.';
-- end of db/functions/kiln_private.tg_generations__tags.sql
drop trigger if exists tg_generations__tags on kiln_private.generations;
create trigger tg_generations__tags after insert on kiln_private.generations
  referencing new table as new_rows for each statement execute function kiln_private.tg_generations__tags();
-- included from db/functions/kiln.list_generations.sql
-- functions/kiln.list_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_generations(p_account_id uuid, p_workspace_id uuid, p_origin text, p_limit integer, p_before_at timestamp with time zone, p_before_id uuid, p_statuses text[], p_types text[], p_model_id text, p_since timestamp with time zone, p_end_user text DEFAULT NULL::text, p_metadata jsonb DEFAULT NULL::jsonb)
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
  v_key text;
  v_value text;
begin
  if p_end_user is not null then
    -- One end user's: generations_end_user_list_idx, a keyset probe per (type, status).
    select array_agg(h.id order by h.created_at desc, h.id desc) into v_ids
    from (select h.created_at, h.id
          from unnest(v_types) t(type) cross join unnest(v_statuses) s(status)
          cross join lateral (
            select g.created_at, g.id from kiln_private.generations g
            where g.account_id = p_account_id and coalesce(g.workspace_id, g.account_id) = v_pool
              and g.origin = p_origin and g.end_user = p_end_user and g.type = t.type and g.status = s.status
              and (g.created_at, g.id) < (v_at, v_id) and g.created_at >= v_since
              and (p_model_id is null or g.model_id = p_model_id)
              and (p_metadata is null or g.metadata @> p_metadata)
            order by g.created_at desc, g.id desc
            limit v_limit + 1) h
          order by h.created_at desc, h.id desc
          limit v_limit + 1) h;
  elsif p_metadata is not null then
    -- Tagged ones: one of the pairs through generation_tags_list_idx in keyset order (a page reads
    -- about a page of it), the other pairs and filters on the row.
    select t.key, t.value into v_key, v_value from jsonb_each_text(p_metadata) t order by t.key limit 1;
    select array_agg(h.id order by h.created_at desc, h.id desc) into v_ids
    from (select t.created_at, t.generation_id as id
          from kiln_private.generation_tags t
          join kiln_private.generations g on g.id = t.generation_id
          where t.account_id = p_account_id and t.pool_id = v_pool and t.origin = p_origin
            and t.mkey = v_key and t.mvalue = v_value
            and (t.created_at, t.generation_id) < (v_at, v_id) and t.created_at >= v_since
            and g.metadata @> p_metadata
            and g.type = any (v_types) and g.status = any (v_statuses)
            and (p_model_id is null or g.model_id = p_model_id)
          order by t.created_at desc, t.generation_id desc
          limit v_limit + 1) h;
  elsif p_model_id is null then
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
comment on function kiln.list_generations(uuid,uuid,text,integer,timestamp with time zone,uuid,text[],text[],text,timestamp with time zone,text,jsonb) is 'A page of an account''s generations in one billing scope (p_workspace_id null = the personal budget) created through p_origin, newest first, before (p_before_at, p_before_id) (keyset), filtered by statuses, types, model, created at or after p_since, end user (p_end_user) and metadata containing every pair of p_metadata (null = any): {data: [kiln_private.generation_body], next: {at: epoch microseconds, id} | null}. At most 2 × 4 index probes of a page each.';
-- end of db/functions/kiln.list_generations.sql
drop index if exists kiln_private.generations_metadata_idx;

--! split: 2-eu-budgets.sql
-- Budgets per end user (docs/usage.md, "Budgets per end user"): a cap per billing scope (the pool:
-- the account, or the workspace of workspace-bound calls) and end user, reserved in the same
-- transaction as the pool's and the key's budgets.
create table if not exists kiln_private.end_user_budgets (
  pool_id uuid not null,
  end_user text not null check (char_length(end_user) between 1 and 128),
  budget_micros bigint not null check (budget_micros >= 0),
  period text not null check (period in ('day', 'month')),
  rpm integer check (rpm >= 1),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (pool_id, end_user)
);
comment on table kiln_private.end_user_budgets is 'PUT /end-users/{endUser}: an end user''s cap in a billing scope (pool_id: the account, or the workspace for workspace-bound calls), per UTC day or calendar month (UTC), and its optional rpm (GCRA bucket "end_user:<pool>:<end user>"). Enforced by kiln_private.reserve_budgets and kiln_private.insert_generations; changes are audited (end_user.budget_set, end_user.budget_removed).';

create table if not exists kiln_private.end_user_budget_periods (
  pool_id uuid not null,
  end_user text not null,
  period_start timestamptz not null,
  held_micros bigint not null default 0 check (held_micros >= 0),
  settled_micros bigint not null default 0 check (settled_micros >= 0),
  primary key (pool_id, end_user, period_start)
) with (fillfactor = 50);
-- Updated by every reservation, settlement and release of a capped end user: room on the page
-- keeps those updates HOT (as for kiln_private.rate_limit_buckets).
alter table kiln_private.end_user_budget_periods set (fillfactor = 50);
comment on table kiln_private.end_user_budget_periods is 'Running totals of end users with a cap, per period (a UTC day or a calendar month, as the cap says); debited in the same statement as the pool (kiln_private.reserve_budgets) and ended with it (settle_charge, release_charge, through charges.end_user_period).';

alter table kiln_private.charges add column if not exists end_user_period timestamptz;
comment on column kiln_private.charges.end_user_period is 'The reservation is also held on its end user''s cap: the period_start of its row in kiln_private.end_user_budget_periods (null = no cap held).';
-- An end user's spend in a period without a cap (GET /end-users/{endUser}) and the seed of a new
-- cap's period: its charges of the pool since a time.
create index if not exists charges_end_user_idx on kiln_private.charges (pool_id, end_user, created_at) where end_user is not null;

drop function if exists kiln_private.reserve_budgets(uuid[], uuid[], uuid[], text[], text[], bigint[], uuid[], uuid[], text[]);
drop function if exists kiln.reserve_budget(uuid, uuid, uuid, text, text, bigint, uuid, uuid, text);

-- included from db/functions/kiln_private.end_user_period.sql
-- functions/kiln_private.end_user_period.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.end_user_period.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.end_user_period(p_period text, p_at timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  -- 'day': the UTC day; 'month': the calendar month in UTC.
  select date_trunc(p_period, p_at at time zone 'UTC') at time zone 'UTC';
$function$;
comment on function kiln_private.end_user_period(text,timestamp with time zone) is 'Start of the end-user cap period (''day'' = the UTC day, ''month'' = the calendar month in UTC) containing p_at.';
-- end of db/functions/kiln_private.end_user_period.sql
-- included from db/functions/kiln_private.debit_end_user_pools.sql
-- functions/kiln_private.debit_end_user_pools.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.debit_end_user_pools.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.debit_end_user_pools(p_pools uuid[], p_end_users text[], p_periods timestamp with time zone[], p_amounts bigint[], p_budgets bigint[])
 RETURNS text[]
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- kiln_private.debit_pools for end users' caps: rows locked in (pool, end user) order.
  with u as (
    select u.pool, u.eu, u.period, u.amount, u.budget
    from unnest(p_pools, p_end_users, p_periods, p_amounts, p_budgets) as u(pool, eu, period, amount, budget)
  ), debited as (
    insert into kiln_private.end_user_budget_periods as b (pool_id, end_user, period_start, held_micros)
      select u.pool, u.eu, u.period, u.amount
      from u
      where u.amount <= u.budget
      order by u.pool, u.eu
    on conflict (pool_id, end_user, period_start) do update
      set held_micros = b.held_micros + excluded.held_micros
      where b.held_micros + b.settled_micros + excluded.held_micros
            <= (select u.budget from u where u.pool = b.pool_id and u.eu = b.end_user)
    returning b.pool_id, b.end_user)
  select coalesce(array_agg(pool_id::text || ':' || end_user), '{}') from debited;
$function$;
comment on function kiln_private.debit_end_user_pools(uuid[],text[],timestamp with time zone[],bigint[],bigint[]) is 'Adds each amount to its end user''s held total for the period when settled + held stays within the cap, rows in (pool, end user) order; returns the ones debited as ''<pool id>:<end user>''.';
-- end of db/functions/kiln_private.debit_end_user_pools.sql
-- included from db/functions/kiln_private.reserve_budgets.sql
-- functions/kiln_private.reserve_budgets.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.reserve_budgets.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.reserve_budgets(p_account_ids uuid[], p_workspace_ids uuid[], p_key_ids uuid[], p_model_ids text[], p_origins text[], p_amounts bigint[], p_generation_ids uuid[], p_run_ids uuid[], p_node_ids text[], p_end_users text[], p_batch_ids uuid[] DEFAULT NULL::uuid[], p_metadata jsonb[] DEFAULT NULL::jsonb[])
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
  c_ebudget bigint[];
  c_eperiod timestamptz[];
  c_ename text[];
  c_id uuid[];
  v_pools uuid[];
  v_periods timestamptz[];
  v_totals bigint[];
  v_budgets bigint[];
  v_admitted uuid[];
  v_kadmitted uuid[] := '{}';
  v_eadmitted text[] := '{}';
  v_eus text[];
  v_i int;
begin
  if v_n = 0 then
    return;
  end if;
  -- 1. The reservation rules, for the whole set; each request gets its pool, budget and period,
  --    its key's own budget (null = the key has none: only the pool decides) and its end user's
  --    cap (null = none: one index probe, and only for a request that names an end user).
  select array_agg(x.err order by x.i), array_agg(x.msg order by x.i), array_agg(x.pool order by x.i),
         array_agg(x.budget order by x.i), array_agg(x.kbudget order by x.i), array_agg(x.period order by x.i),
         array_agg(x.ebudget order by x.i), array_agg(x.eperiod order by x.i), array_agg(x.ename order by x.i),
         array_agg(kiln_private.uuid_v7() order by x.i)
    into c_err, c_msg, c_pool, c_budget, c_kbudget, c_period, c_ebudget, c_eperiod, c_ename, c_id
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
             eb.budget_micros as ebudget,
             kiln_private.end_user_period(eb.period, now()) as eperiod,
             eb.period as ename,
             kiln_private.period_start(case when p_workspace_ids[s.i] is null then acc.period_anchor else ws.plan_period_anchor end, now()) as period
      from generate_subscripts(p_account_ids, 1) as s(i)
      left join kiln_private.accounts acc on acc.id = p_account_ids[s.i]
      left join kiln_private.workspaces ws on ws.id = p_workspace_ids[s.i]
      left join kiln_private.workspace_members mem
        on mem.workspace_id = p_workspace_ids[s.i] and mem.account_id = p_account_ids[s.i] and mem.left_at is null
      left join kiln_private.api_keys k on k.id = p_key_ids[s.i]
      left join kiln_private.end_user_budgets eb
        on eb.pool_id = coalesce(p_workspace_ids[s.i], p_account_ids[s.i]) and eb.end_user = p_end_users[s.i]
    ) x;

  -- 2. One check-and-debit per pool for the set's total, then one per key budget, then one per
  --    end user's cap: the same transaction, so a request holds all or (below) none. Always in
  --    that order (pools, keys, end users), each in key order: concurrent callers cannot deadlock.
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
  select array_agg(t.pool order by t.pool, t.eu), array_agg(t.eu order by t.pool, t.eu), array_agg(t.period order by t.pool, t.eu),
         array_agg(t.total order by t.pool, t.eu), array_agg(t.budget order by t.pool, t.eu)
    into v_pools, v_eus, v_periods, v_totals, v_budgets
    from (select c_pool[s.i] as pool, p_end_users[s.i] as eu, min(c_eperiod[s.i]) as period, sum(p_amounts[s.i])::bigint as total,
                 min(c_ebudget[s.i]) as budget
          from generate_subscripts(p_account_ids, 1) as s(i) where c_err[s.i] is null and c_ebudget[s.i] is not null group by 1, 2) t;
  if v_pools is not null then
    v_eadmitted := kiln_private.debit_end_user_pools(v_pools, v_eus, v_periods, v_totals, v_budgets);
  end if;

  -- 3. A request whose pool, key budget or end user's cap could not take the set's total gives
  --    back what the others debited for it, then is decided on its own, in arrival order. Row locks are already
  --    held by this transaction, so nobody sees the amounts in between.
  for v_i in
    select s.i from generate_subscripts(p_account_ids, 1) as s(i)
    where c_err[s.i] is null
      and (not (c_pool[s.i] = any (v_admitted)) or (c_kbudget[s.i] is not null and not (p_key_ids[s.i] = any (v_kadmitted)))
           or (c_ebudget[s.i] is not null and not (c_pool[s.i]::text || ':' || p_end_users[s.i] = any (v_eadmitted))))
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
    if c_ebudget[v_i] is not null and c_pool[v_i]::text || ':' || p_end_users[v_i] = any (v_eadmitted) then
      update kiln_private.end_user_budget_periods set held_micros = held_micros - p_amounts[v_i]
        where pool_id = c_pool[v_i] and end_user = p_end_users[v_i] and period_start = c_eperiod[v_i];
    end if;
  end loop;
  for v_i in
    select s.i from generate_subscripts(p_account_ids, 1) as s(i)
    where c_err[s.i] is null
      and (not (c_pool[s.i] = any (v_admitted)) or (c_kbudget[s.i] is not null and not (p_key_ids[s.i] = any (v_kadmitted)))
           or (c_ebudget[s.i] is not null and not (c_pool[s.i]::text || ':' || p_end_users[s.i] = any (v_eadmitted))))
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
    elsif c_ebudget[v_i] is not null
          and cardinality(kiln_private.debit_end_user_pools(array[c_pool[v_i]], array[p_end_users[v_i]], array[c_eperiod[v_i]],
                                                            array[p_amounts[v_i]], array[c_ebudget[v_i]])) = 0 then
      update kiln_private.budget_periods set held_micros = held_micros - p_amounts[v_i]
        where pool_id = c_pool[v_i] and period_start = c_period[v_i];
      if c_kbudget[v_i] is not null then
        update kiln_private.key_budget_periods set held_micros = held_micros - p_amounts[v_i]
          where key_id = p_key_ids[v_i] and period_start = c_period[v_i];
      end if;
      c_err[v_i] := 'KQ001';
      c_msg[v_i] := format('end user "%s"''s budget for this %s is exhausted', p_end_users[v_i], c_ename[v_i]);
    end if;
  end loop;

  -- 4. The ledger: one reserved charge per request that got its reservation, with its batch and
  --    metadata when the caller gives them (p_batch_ids, p_metadata: no update after the insert).
  insert into kiln_private.charges
    (id, account_id, workspace_id, pool_id, period_start, key_id, model_id, origin, reserved_micros,
     generation_id, workflow_run_id, node_id, key_pool, end_user, end_user_period, batch_id, metadata)
  select c_id[s.i], p_account_ids[s.i], p_workspace_ids[s.i], c_pool[s.i], c_period[s.i], p_key_ids[s.i], p_model_ids[s.i],
         p_origins[s.i], p_amounts[s.i], p_generation_ids[s.i], p_run_ids[s.i], p_node_ids[s.i], c_kbudget[s.i] is not null,
         p_end_users[s.i], c_eperiod[s.i], p_batch_ids[s.i], p_metadata[s.i]
  from generate_subscripts(p_account_ids, 1) as s(i)
  where c_err[s.i] is null;

  return query
    select s.i::int, case when c_err[s.i] is null then c_id[s.i] end, c_err[s.i], c_msg[s.i]
    from generate_subscripts(p_account_ids, 1) as s(i)
    order by s.i;
end;
$function$;
comment on function kiln_private.reserve_budgets(uuid[],uuid[],uuid[],text[],text[],bigint[],uuid[],uuid[],text[],text[],uuid[],jsonb[]) is 'Reserves the worst-case cost of each request on its personal pool or, for workspace-bound calls, its Team pool, on its key''s own budget when the key has one and on its end user''s cap (p_end_users; kiln_private.end_user_budgets) when it has one, in the same step, and writes its ledger row (with its end_user, and end_user_period when a cap held it; its batch_id and metadata from the optional p_batch_ids and p_metadata): one check-and-debit per pool, per key and per end user for the set''s total, request by request in arrival order where any cannot take it; a refusal gives back every other debit. Each row carries the charge id or the request''s own refusal: 22023 (bad amount), KN001 (no account), KQ001 (blocked tier, budget, key budget or end user''s cap exhausted), KP001 (plan not active, caller left the workspace).';
-- end of db/functions/kiln_private.reserve_budgets.sql
-- included from db/functions/kiln.reserve_budget.sql
-- functions/kiln.reserve_budget.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.reserve_budget.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.reserve_budget(p_account_id uuid, p_workspace_id uuid, p_key_id uuid, p_model_id text, p_origin text, p_amount_micros bigint, p_generation_id uuid DEFAULT NULL::uuid, p_workflow_run_id uuid DEFAULT NULL::uuid, p_node_id text DEFAULT NULL::text, p_end_user text DEFAULT NULL::text)
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
    array[p_origin], array[p_amount_micros], array[p_generation_id], array[p_workflow_run_id], array[p_node_id], array[p_end_user]);
  if v_r.error_code is not null then
    raise exception '%', v_r.error_message using errcode = v_r.error_code;
  end if;
  select * into v_charge from kiln_private.charges where id = v_r.charge_id;
  return v_charge;
end;
$function$;
comment on function kiln.reserve_budget(uuid,uuid,uuid,text,text,bigint,uuid,uuid,text,text) is 'kiln_private.reserve_budgets for one request: reserves the worst-case cost on the personal pool or, for workspace-bound calls, the Team pool, and on the key''s and the end user''s (p_end_user) caps when they have one. Raises KQ001 (blocked tier or budget exhausted), KP001 (plan not active, or caller left the workspace), KN001, 22023.';
-- end of db/functions/kiln.reserve_budget.sql
-- included from db/functions/kiln.reserve_generation.sql
-- functions/kiln.reserve_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.reserve_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

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
                                  p_amount_micros, v_gen.id, v_gen.run_id, v_gen.output_node_id, v_gen.end_user);
  if v_gen.batch_id is not null then
    -- A batch line's charge names its batch: usage and the analysts' views show batch spend apart.
    update kiln_private.charges set batch_id = v_gen.batch_id where id = v_charge.id;
  end if;
  update kiln_private.generations
    set charge_id = v_charge.id, reserved_micros = v_charge.reserved_micros, updated_at = now()
    where id = p_id;
  -- The charge carries the generation's attribution (docs/api.md, "Attribution"): its end user
  -- from kiln.reserve_budget, its metadata here.
  if v_gen.metadata is not null then
    update kiln_private.charges set metadata = v_gen.metadata where id = v_charge.id;
  end if;
  return json_build_object('ok', true, 'reserved_micros', v_charge.reserved_micros);
end;
$function$;
comment on function kiln.reserve_generation(uuid,bigint) is 'Reserves the worst-case cost of a processing generation created without a reservation (a run output, priced once its inputs are known; a batch line, whose charge gets its batch_id) on its budget pool, once (idempotent), and on its end user''s cap when it has one; the charge carries the generation''s end_user and metadata. Raises KQ001 or KP001 when the budget cannot cover it.';
-- end of db/functions/kiln.reserve_generation.sql
-- included from db/functions/kiln_private.insert_generations.sql
-- functions/kiln_private.insert_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.insert_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

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
  v_retry int;
  v_eu record;
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
               -- A key made with requireEndUser spends only for a named end user.
               when k.require_end_user and p_requests[s.i]->>'endUser' is null then 'KI002'
             end as err,
             case
               when p_types[s.i] is null or p_types[s.i] not in ('image', 'code') then 'type must be image or code'
               when m.id is null then format('model "%s" is not in the catalog', left(p_model_ids[s.i], 200))
               when p_model_versions[s.i] is not null
                    and p_model_versions[s.i] <> (extract(epoch from m.updated_at) * 1000000)::bigint then 'the catalog entry changed; price again'
               when (p_types[s.i] = 'image') <> (m.category = 'image') then format('model "%s" cannot produce %s output', m.id, p_types[s.i])
               when k.require_end_user and p_requests[s.i]->>'endUser' is null then 'endUser: is required: this API key requires an end user (requireEndUser)'
             end as msg
      from generate_subscripts(p_account_ids, 1) as s(i)
      left join kiln_private.models m on m.id = p_model_ids[s.i] and m.enabled
      left join kiln_private.api_keys k on k.id = p_key_ids[s.i]
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

  -- 1c. End users' rpm (kiln_private.end_user_budgets.rpm): one request against the end user's
  --     GCRA bucket, in bucket order then arrival order (buckets are locked in one order: no
  --     deadlocks). Only requests naming an end user look; only a cap with an rpm consumes.
  if exists (select 1 from generate_subscripts(p_account_ids, 1) as s(i) where c_err[s.i] is null and p_requests[s.i] ? 'endUser') then
    for v_eu in
      select s.i, eb.rpm, 'end_user:' || eb.pool_id::text || ':' || eb.end_user as bucket
      from generate_subscripts(p_account_ids, 1) as s(i)
      join kiln_private.end_user_budgets eb
        on eb.pool_id = coalesce(p_workspace_ids[s.i], p_account_ids[s.i]) and eb.end_user = p_requests[s.i]->>'endUser'
      where c_err[s.i] is null and eb.rpm is not null
      order by 3, 1
    loop
      v_retry := kiln.consume_rate_limits(array[v_eu.bucket], array[v_eu.rpm]);
      if v_retry > 0 then
        c_err[v_eu.i] := 'KR001';
        c_msg[v_eu.i] := format('Too many requests for end user "%s" (%s per minute). Retry after %s second%s.',
                                p_requests[v_eu.i]->>'endUser', v_eu.rpm, v_retry, case when v_retry = 1 then '' else 's' end);
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
        array_fill(null::text, array[cardinality(v_idx)]),
        array(select p_requests[i]->>'endUser' from unnest(v_idx) as u(i))) r;
    for v_n in 1 .. cardinality(v_idx) loop
      c_charge[v_idx[v_n]] := r_charge[v_n];
      c_err[v_idx[v_n]] := r_err[v_n];
      c_msg[v_idx[v_n]] := r_msg[v_n];
    end loop;

    -- 3. The generations that got their reservation, and their jobs.
    with gens as (
      insert into kiln_private.generations
        (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, charge_id, max_attempts, end_user, metadata)
      select c_gid[s.i], p_account_ids[s.i], p_key_ids[s.i], p_workspace_ids[s.i], p_origins[s.i], p_model_ids[s.i],
             p_types[s.i], p_requests[s.i], p_reserves[s.i], c_charge[s.i], p_max_attempts,
             p_requests[s.i]->>'endUser', nullif(p_requests[s.i]->'metadata', 'null'::jsonb)
      from generate_subscripts(p_account_ids, 1) as s(i)
      where c_charge[s.i] is not null
      returning id, created_at
    )
    select array_agg(g.id order by g.created_at) into v_created from gens g;
    perform kiln_private.enqueue_new_generations(v_created, p_max_attempts);
    -- The charges reserve_budgets made carry their generation's attribution (docs/api.md,
    -- "Attribution"): the end user from reserve_budgets, the metadata here; requests without
    -- metadata touch no charge.
    if exists (select 1 from generate_subscripts(p_account_ids, 1) as s(i)
               where c_charge[s.i] is not null and p_requests[s.i] ? 'metadata') then
      update kiln_private.charges c
        set metadata = nullif(p_requests[s.i]->'metadata', 'null'::jsonb)
        from generate_subscripts(p_account_ids, 1) as s(i)
        where c.id = c_charge[s.i] and p_requests[s.i] ? 'metadata';
    end if;
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
comment on function kiln_private.insert_generations(uuid[],uuid[],uuid[],text[],text[],text[],bigint[],jsonb[],bigint[],integer,text[],bytea[],integer) is 'The generation primitive: claims the requests'' idempotency keys (kiln_private.claim_idempotency_keys; a replay answers the stored id, another body KD001), checks each request''s type and model (KI001), its catalog price version (KS001) and, for a key made with requireEndUser, its endUser (KI002), consumes its end user''s rpm when the end user has a cap with one (KR001, in the message the seconds to wait), reserves the worst case (kiln_private.reserve_budgets), inserts the generations with their attribution (the request''s endUser and metadata, copied onto their charges too) and queues their generation__run jobs, for a whole set at once. Each row carries the new (or replayed) id or the request''s own refusal; the others still go in.';
-- end of db/functions/kiln_private.insert_generations.sql
-- included from db/functions/kiln.settle_charge.sql
-- functions/kiln.settle_charge.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.settle_charge.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

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
  if v_charge.end_user_period is not null then
    update kiln_private.end_user_budget_periods
      set held_micros = held_micros - v_charge.reserved_micros,
          settled_micros = settled_micros + v_amount
      where pool_id = v_charge.pool_id and end_user = v_charge.end_user and period_start = v_charge.end_user_period;
  end if;
  update kiln_private.charges
    set status = 'settled', settled_micros = v_amount, finished_at = now()
    where id = p_charge_id
    returning * into v_charge;
  return v_charge;
end;
$function$;
comment on function kiln.settle_charge(uuid,bigint) is 'Settles a reservation at the actual cost (clamped to the reservation). The pool''s, the key''s and the end user''s held amounts become settled alike. Idempotent: settling or releasing twice changes nothing.';
-- end of db/functions/kiln.settle_charge.sql
-- included from db/functions/kiln.release_charge.sql
-- functions/kiln.release_charge.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.release_charge.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

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
  if v_charge.end_user_period is not null then
    update kiln_private.end_user_budget_periods
      set held_micros = held_micros - v_charge.reserved_micros
      where pool_id = v_charge.pool_id and end_user = v_charge.end_user and period_start = v_charge.end_user_period;
  end if;
  update kiln_private.charges
    set status = 'released', finished_at = now()
    where id = p_charge_id
    returning * into v_charge;
  return v_charge;
end;
$function$;
comment on function kiln.release_charge(uuid) is 'Releases a reservation without charging (failed output), on the pool, the key''s budget and the end user''s cap alike. Idempotent; a settled charge stays settled.';
-- end of db/functions/kiln.release_charge.sql
-- included from db/functions/kiln_private.end_user_spend.sql
-- functions/kiln_private.end_user_spend.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.end_user_spend.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.end_user_spend(p_pool_id uuid, p_end_user text, p_since timestamp with time zone)
 RETURNS TABLE(settled_micros bigint, held_micros bigint)
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- An end user's charges of a pool since a time (charges_end_user_idx): what settled, and what
  -- open reservations hold.
  select coalesce(sum(c.settled_micros) filter (where c.status = 'settled'), 0)::bigint,
         coalesce(sum(c.reserved_micros) filter (where c.status = 'reserved'), 0)::bigint
  from kiln_private.charges c
  where c.pool_id = p_pool_id and c.end_user = p_end_user and c.created_at >= p_since;
$function$;
comment on function kiln_private.end_user_spend(uuid,text,timestamp with time zone) is 'What an end user''s charges of a pool created since p_since settled, and what its open reservations hold (charges_end_user_idx).';
-- end of db/functions/kiln_private.end_user_spend.sql
-- included from db/functions/kiln_private.end_user_budget_json.sql
-- functions/kiln_private.end_user_budget_json.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.end_user_budget_json.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.end_user_budget_json(p_pool_id uuid, p_end_user text)
 RETURNS json
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_cap kiln_private.end_user_budgets;
  v_start timestamptz;
  v_settled bigint := 0;
  v_held bigint := 0;
begin
  select * into v_cap from kiln_private.end_user_budgets where pool_id = p_pool_id and end_user = p_end_user;
  if v_cap.pool_id is not null then
    -- A cap: its running totals, what enforcement reads.
    v_start := kiln_private.end_user_period(v_cap.period, now());
    select b.settled_micros, b.held_micros into v_settled, v_held
      from kiln_private.end_user_budget_periods b
      where b.pool_id = p_pool_id and b.end_user = p_end_user and b.period_start = v_start;
  else
    -- None: this calendar month's charges (UTC).
    v_start := kiln_private.end_user_period('month', now());
    select s.settled_micros, s.held_micros into v_settled, v_held from kiln_private.end_user_spend(p_pool_id, p_end_user, v_start) s;
  end if;
  v_settled := coalesce(v_settled, 0);
  v_held := coalesce(v_held, 0);
  return json_build_object(
    'endUser', p_end_user,
    'budgetMicros', v_cap.budget_micros,
    'period', coalesce(v_cap.period, 'month'),
    'rpm', v_cap.rpm,
    'periodStart', to_char(v_start at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'usedMicros', v_settled + v_held,
    'heldMicros', v_held,
    'remainingMicros', case when v_cap.pool_id is not null then greatest(v_cap.budget_micros - v_settled - v_held, 0) end,
    'updatedAt', to_char(v_cap.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
end;
$function$;
comment on function kiln_private.end_user_budget_json(uuid,text) is 'An end user of a pool as GET /end-users/{endUser} shows it: its cap (budgetMicros, period, rpm; null and ''month'' without one) and this period''s use: settled + held (usedMicros), held, and what remains of the cap.';
-- end of db/functions/kiln_private.end_user_budget_json.sql
-- included from db/functions/kiln.get_end_user_budget.sql
-- functions/kiln.get_end_user_budget.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_end_user_budget.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_end_user_budget(p_account_id uuid, p_workspace_id uuid, p_end_user text)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select kiln_private.end_user_budget_json(coalesce(p_workspace_id, p_account_id), p_end_user);
$function$;
comment on function kiln.get_end_user_budget(uuid,uuid,text) is 'GET /end-users/{endUser}: the end user''s cap and use in the caller''s billing scope (the workspace for a workspace-bound caller, else the account). An end user without a cap answers its use this calendar month (UTC) with budgetMicros null.';
-- end of db/functions/kiln.get_end_user_budget.sql
-- included from db/functions/kiln.set_end_user_budget.sql
-- functions/kiln.set_end_user_budget.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.set_end_user_budget.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.set_end_user_budget(p_account_id uuid, p_workspace_id uuid, p_end_user text, p_budget_micros bigint, p_period text, p_rpm integer)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_pool uuid := coalesce(p_workspace_id, p_account_id);
  v_old kiln_private.end_user_budgets;
  v_start timestamptz;
  v_settled bigint;
  v_held bigint;
begin
  if p_end_user is null or char_length(p_end_user) not between 1 and 128 then
    raise exception 'endUser: must be 1 to 128 characters' using errcode = 'KI001';
  end if;
  if p_budget_micros is null or p_budget_micros < 0 then
    raise exception 'budgetMicros: must be a whole number of at least 0' using errcode = 'KI001';
  end if;
  if p_period is null or p_period not in ('day', 'month') then
    raise exception 'period: must be one of "day", "month"' using errcode = 'KI001';
  end if;
  if p_rpm is not null and p_rpm < 1 then
    raise exception 'rpm: must be at least 1' using errcode = 'KI001';
  end if;
  select * into v_old from kiln_private.end_user_budgets where pool_id = v_pool and end_user = p_end_user for update;
  if v_old.pool_id is null then
    insert into kiln_private.end_user_budgets (pool_id, end_user, budget_micros, period, rpm)
      values (v_pool, p_end_user, p_budget_micros, p_period, p_rpm)
      on conflict (pool_id, end_user) do update
        set budget_micros = excluded.budget_micros, period = excluded.period, rpm = excluded.rpm, updated_at = now();
  elsif (v_old.budget_micros, v_old.period, v_old.rpm) is distinct from (p_budget_micros, p_period, p_rpm) then
    update kiln_private.end_user_budgets set budget_micros = p_budget_micros, period = p_period, rpm = p_rpm, updated_at = now()
      where pool_id = v_pool and end_user = p_end_user;
  end if;
  if v_old.pool_id is null or v_old.period <> p_period then
    -- A new cap, or a new period: its period counts what the end user spent in it already. The
    -- open reservations of the period are held on it from now on (locked first, as settle_charge
    -- locks a charge before its totals), then the period's totals are counted afresh.
    v_start := kiln_private.end_user_period(p_period, now());
    update kiln_private.charges set end_user_period = v_start
      where pool_id = v_pool and end_user = p_end_user and created_at >= v_start and status = 'reserved'
        and end_user_period is distinct from v_start;
    insert into kiln_private.end_user_budget_periods (pool_id, end_user, period_start)
      values (v_pool, p_end_user, v_start)
      on conflict (pool_id, end_user, period_start) do nothing;
    perform 1 from kiln_private.end_user_budget_periods
      where pool_id = v_pool and end_user = p_end_user and period_start = v_start for update;
    select coalesce(sum(c.settled_micros) filter (where c.status = 'settled'), 0),
           coalesce(sum(c.reserved_micros) filter (where c.status = 'reserved' and c.end_user_period = v_start), 0)
      into v_settled, v_held
      from kiln_private.charges c
      where c.pool_id = v_pool and c.end_user = p_end_user and c.created_at >= v_start;
    update kiln_private.end_user_budget_periods set settled_micros = v_settled, held_micros = v_held
      where pool_id = v_pool and end_user = p_end_user and period_start = v_start;
  end if;
  return kiln_private.end_user_budget_json(v_pool, p_end_user);
end;
$function$;
comment on function kiln.set_end_user_budget(uuid,uuid,text,bigint,text,integer) is 'PUT /end-users/{endUser}: sets the end user''s cap in the caller''s billing scope (the workspace for a workspace-bound caller, else the account): budget_micros per period (''day'' = UTC day, ''month'' = calendar month in UTC) and rpm (null = none). A new cap, or a new period, starts from what the end user already spent in the period (its charges, its open reservations then held on the cap). Audited (end_user.budget_set, only when something changed). KI001 for a bad value.';
-- end of db/functions/kiln.set_end_user_budget.sql
-- included from db/functions/kiln.remove_end_user_budget.sql
-- functions/kiln.remove_end_user_budget.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.remove_end_user_budget.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.remove_end_user_budget(p_account_id uuid, p_workspace_id uuid, p_end_user text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- The period totals stay: reservations held on the cap still end on them (settle_charge,
  -- release_charge), and a cap set again within the period counts afresh.
  delete from kiln_private.end_user_budgets where pool_id = coalesce(p_workspace_id, p_account_id) and end_user = p_end_user;
  if not found then
    raise exception 'end user "%" has no budget', p_end_user using errcode = 'KN001';
  end if;
end;
$function$;
comment on function kiln.remove_end_user_budget(uuid,uuid,text) is 'DELETE /end-users/{endUser}: removes the end user''s cap in the caller''s billing scope (audited: end_user.budget_removed). KN001 when it has none.';
-- end of db/functions/kiln.remove_end_user_budget.sql
-- included from db/functions/kiln_private.tg_end_user_budgets__audit.sql
-- functions/kiln_private.tg_end_user_budgets__audit.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_end_user_budgets__audit.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_end_user_budgets__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if tg_op = 'DELETE' then
    perform kiln_private.audit(old.pool_id, 'end_user.budget_removed', 'end_user', old.end_user,
      jsonb_build_object('endUser', old.end_user,
        'previous', jsonb_build_object('budgetMicros', old.budget_micros, 'period', old.period, 'rpm', old.rpm)));
  elsif tg_op = 'INSERT' then
    perform kiln_private.audit(new.pool_id, 'end_user.budget_set', 'end_user', new.end_user,
      jsonb_build_object('endUser', new.end_user, 'budgetMicros', new.budget_micros, 'period', new.period, 'rpm', new.rpm,
        'previous', null));
  elsif (old.budget_micros, old.period, old.rpm) is distinct from (new.budget_micros, new.period, new.rpm) then
    perform kiln_private.audit(new.pool_id, 'end_user.budget_set', 'end_user', new.end_user,
      jsonb_build_object('endUser', new.end_user, 'budgetMicros', new.budget_micros, 'period', new.period, 'rpm', new.rpm,
        'previous', jsonb_build_object('budgetMicros', old.budget_micros, 'period', old.period, 'rpm', old.rpm)));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_end_user_budgets__audit() is 'Trigger: end_user.budget_set (the new settings and the previous ones, null for a new cap) and end_user.budget_removed in the audit log of the cap''s billing scope.';
-- end of db/functions/kiln_private.tg_end_user_budgets__audit.sql

drop trigger if exists tg_end_user_budgets__audit on kiln_private.end_user_budgets;
create trigger tg_end_user_budgets__audit after insert or update or delete on kiln_private.end_user_budgets
  for each row execute function kiln_private.tg_end_user_budgets__audit();

--! split: 3-eu-usage.sql
-- Spend by end user and by metadata pair (docs/usage.md, "Usage by end user and by metadata"):
-- roll-ups kept beside kiln_private.charge_days by the same triggers (kiln_private.roll_up_charges),
-- rebuilt with it (kiln_private.rebuild_charge_days), and the reads over them.

-- Ended charges with an end user, per pool, UTC day and end user.
create table if not exists kiln_private.charge_end_user_days (
  pool_id uuid not null,
  day date not null,
  end_user text collate "C" not null,
  workspace_id uuid,
  charges bigint not null default 0,
  settled_charges bigint not null default 0,
  released_charges bigint not null default 0,
  spend_micros bigint not null default 0,
  batch_charges bigint not null default 0,
  batch_settled_charges bigint not null default 0,
  batch_released_charges bigint not null default 0,
  batch_spend_micros bigint not null default 0,
  primary key (pool_id, day, end_user)
) with (fillfactor = 80);
comment on table kiln_private.charge_end_user_days is 'Ended charges of kiln_private.charges with an end_user, summed per budget pool, UTC day of creation and end user, with the meaning of kiln_private.charge_days'' columns (batch_* the part of batch lines). Kept by kiln_private.roll_up_charges in the transaction that ends a charge; open reservations are read from the ledger.';
-- A day's end users by spend (GET /usage/daily?groupBy=endUser): keyset pages read in this order.
create index if not exists charge_end_user_days_spend_idx on kiln_private.charge_end_user_days
  (pool_id, day, (- spend_micros), end_user) where settled_charges > 0;

-- The same per calendar month (UTC): GET /end-users for a month reads it in spend order.
create table if not exists kiln_private.charge_end_user_months (
  pool_id uuid not null,
  month date not null,
  end_user text collate "C" not null,
  workspace_id uuid,
  charges bigint not null default 0,
  settled_charges bigint not null default 0,
  released_charges bigint not null default 0,
  spend_micros bigint not null default 0,
  batch_charges bigint not null default 0,
  batch_settled_charges bigint not null default 0,
  batch_released_charges bigint not null default 0,
  batch_spend_micros bigint not null default 0,
  primary key (pool_id, month, end_user)
) with (fillfactor = 80);
comment on table kiln_private.charge_end_user_months is 'kiln_private.charge_end_user_days summed per calendar month (UTC; month = its first day): the month''s end users of a pool in spend order (charge_end_user_months_spend_idx) for GET /end-users.';
create index if not exists charge_end_user_months_spend_idx on kiln_private.charge_end_user_months
  (pool_id, month, (- spend_micros), end_user) where settled_charges > 0;

-- Ended charges with metadata, per pool, UTC day and metadata pair (a charge with three pairs
-- counts in three rows).
create table if not exists kiln_private.charge_metadata_days (
  pool_id uuid not null,
  day date not null,
  mkey text collate "C" not null,
  mvalue text collate "C" not null,
  workspace_id uuid,
  charges bigint not null default 0,
  settled_charges bigint not null default 0,
  released_charges bigint not null default 0,
  spend_micros bigint not null default 0,
  batch_charges bigint not null default 0,
  batch_settled_charges bigint not null default 0,
  batch_released_charges bigint not null default 0,
  batch_spend_micros bigint not null default 0,
  primary key (pool_id, day, mkey, mvalue)
) with (fillfactor = 80);
comment on table kiln_private.charge_metadata_days is 'Ended charges of kiln_private.charges per budget pool, UTC day and metadata pair (mkey, mvalue): each charge counts once under each of its pairs. Same columns and upkeep as kiln_private.charge_end_user_days.';
create index if not exists charge_metadata_days_spend_idx on kiln_private.charge_metadata_days
  (pool_id, mkey, day, (- spend_micros), mvalue) where settled_charges > 0;

-- What the groups of a day add up to, per attribute: 'endUser' (charges with an end user) and
-- 'metadata.<key>' (charges with that key). The day's total minus this is the null group.
create table if not exists kiln_private.charge_attribute_days (
  pool_id uuid not null,
  day date not null,
  attribute text collate "C" not null,
  charges bigint not null default 0,
  settled_charges bigint not null default 0,
  released_charges bigint not null default 0,
  spend_micros bigint not null default 0,
  batch_charges bigint not null default 0,
  batch_settled_charges bigint not null default 0,
  batch_released_charges bigint not null default 0,
  batch_spend_micros bigint not null default 0,
  primary key (pool_id, day, attribute)
) with (fillfactor = 80);
comment on table kiln_private.charge_attribute_days is 'Per budget pool and UTC day, the ended charges that have an attribute: ''endUser'' (an end_user) or ''metadata.<key>'' (that metadata key): the sum of that attribute''s groups, so the day''s total (kiln_private.charge_days) minus it is the group without the attribute.';

-- included from db/functions/kiln_private.roll_up_charges.sql
-- functions/kiln_private.roll_up_charges.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.roll_up_charges.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.roll_up_charges(p_added kiln_private.charges[], p_removed kiln_private.charges[])
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
begin
  -- PL/pgSQL, so that each statement's plan is kept for the session (a SQL function planned its
  -- five statements at every call: most of a settlement's roll-up time).
  -- Each ended charge row contributes its counts to its group (an open reservation contributes
  -- nothing), and a batch line's (batch_id set) to the group's batch part too; a change is its
  -- new row minus its old one.
  with delta as (
    select c.pool_id, c.period_start, (c.created_at at time zone 'UTC')::date as day, c.account_id, c.workspace_id,
           c.key_id, c.model_id, c.origin, c.sign, (c.batch_id is not null)::int as batch,
           (c.status = 'settled')::int as settled, (c.status = 'released')::int as released,
           coalesce(c.settled_micros, 0) as spend
    from (select a.*, 1 as sign from unnest(p_added) a
          union all
          select r.*, -1 from unnest(p_removed) r) c
    where c.status <> 'reserved'
  ), summed as (
    select pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
           sum(sign)::bigint as charges, sum(sign * settled)::bigint as settled, sum(sign * released)::bigint as released,
           sum(sign * spend)::bigint as spend,
           sum(sign * batch)::bigint as b_charges, sum(sign * batch * settled)::bigint as b_settled,
           sum(sign * batch * released)::bigint as b_released, sum(sign * batch * spend)::bigint as b_spend
    from delta
    group by pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin
  )
  insert into kiln_private.charge_days as t
    (pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
     charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
         charges, settled, released, spend, b_charges, b_settled, b_released, b_spend
  from summed
  where charges <> 0 or settled <> 0 or released <> 0 or spend <> 0
     or b_charges <> 0 or b_settled <> 0 or b_released <> 0 or b_spend <> 0
  -- Rows locked in key order, as budgets are: concurrent writers cannot deadlock here.
  order by pool_id, day, account_id, model_id, origin, key_id, period_start
  on conflict (pool_id, day, account_id, model_id, origin, key_id, period_start) do update
    set charges = t.charges + excluded.charges,
        settled_charges = t.settled_charges + excluded.settled_charges,
        released_charges = t.released_charges + excluded.released_charges,
        spend_micros = t.spend_micros + excluded.spend_micros,
        batch_charges = t.batch_charges + excluded.batch_charges,
        batch_settled_charges = t.batch_settled_charges + excluded.batch_settled_charges,
        batch_released_charges = t.batch_released_charges + excluded.batch_released_charges,
        batch_spend_micros = t.batch_spend_micros + excluded.batch_spend_micros;
  -- The same contributions by attribution (docs/usage.md, "Usage by end user and by metadata"):
  -- only charges with an end user or metadata make rows there. Each table's rows in key order, the
  -- tables always in this order.
  with delta as (
    select c.pool_id, (c.created_at at time zone 'UTC')::date as day, c.workspace_id, c.end_user, c.metadata, c.sign,
           (c.batch_id is not null)::int as batch, (c.status = 'settled')::int as settled,
           (c.status = 'released')::int as released, coalesce(c.settled_micros, 0) as spend
    from (select a.*, 1 as sign from unnest(p_added) a
          union all
          select r.*, -1 from unnest(p_removed) r) c
    where c.status <> 'reserved' and c.end_user is not null
  ), summed as (
    select pool_id, day, end_user, workspace_id,
           sum(sign)::bigint as charges, sum(sign * settled)::bigint as settled, sum(sign * released)::bigint as released,
           sum(sign * spend)::bigint as spend,
           sum(sign * batch)::bigint as b_charges, sum(sign * batch * settled)::bigint as b_settled,
           sum(sign * batch * released)::bigint as b_released, sum(sign * batch * spend)::bigint as b_spend
    from delta
    group by pool_id, day, end_user, workspace_id
  )
  insert into kiln_private.charge_end_user_days as t
    (pool_id, day, end_user, workspace_id, charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, day, end_user, workspace_id, charges, settled, released, spend, b_charges, b_settled, b_released, b_spend
  from summed
  where charges <> 0 or settled <> 0 or released <> 0 or spend <> 0
     or b_charges <> 0 or b_settled <> 0 or b_released <> 0 or b_spend <> 0
  order by pool_id, day, end_user
  on conflict (pool_id, day, end_user) do update
    set charges = t.charges + excluded.charges,
        settled_charges = t.settled_charges + excluded.settled_charges,
        released_charges = t.released_charges + excluded.released_charges,
        spend_micros = t.spend_micros + excluded.spend_micros,
        batch_charges = t.batch_charges + excluded.batch_charges,
        batch_settled_charges = t.batch_settled_charges + excluded.batch_settled_charges,
        batch_released_charges = t.batch_released_charges + excluded.batch_released_charges,
        batch_spend_micros = t.batch_spend_micros + excluded.batch_spend_micros;
  with delta as (
    select c.pool_id, date_trunc('month', c.created_at at time zone 'UTC')::date as month, c.workspace_id, c.end_user, c.sign,
           (c.batch_id is not null)::int as batch, (c.status = 'settled')::int as settled,
           (c.status = 'released')::int as released, coalesce(c.settled_micros, 0) as spend
    from (select a.*, 1 as sign from unnest(p_added) a
          union all
          select r.*, -1 from unnest(p_removed) r) c
    where c.status <> 'reserved' and c.end_user is not null
  ), summed as (
    select pool_id, month, end_user, workspace_id,
           sum(sign)::bigint as charges, sum(sign * settled)::bigint as settled, sum(sign * released)::bigint as released,
           sum(sign * spend)::bigint as spend,
           sum(sign * batch)::bigint as b_charges, sum(sign * batch * settled)::bigint as b_settled,
           sum(sign * batch * released)::bigint as b_released, sum(sign * batch * spend)::bigint as b_spend
    from delta
    group by pool_id, month, end_user, workspace_id
  )
  insert into kiln_private.charge_end_user_months as t
    (pool_id, month, end_user, workspace_id, charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, month, end_user, workspace_id, charges, settled, released, spend, b_charges, b_settled, b_released, b_spend
  from summed
  where charges <> 0 or settled <> 0 or released <> 0 or spend <> 0
     or b_charges <> 0 or b_settled <> 0 or b_released <> 0 or b_spend <> 0
  order by pool_id, month, end_user
  on conflict (pool_id, month, end_user) do update
    set charges = t.charges + excluded.charges,
        settled_charges = t.settled_charges + excluded.settled_charges,
        released_charges = t.released_charges + excluded.released_charges,
        spend_micros = t.spend_micros + excluded.spend_micros,
        batch_charges = t.batch_charges + excluded.batch_charges,
        batch_settled_charges = t.batch_settled_charges + excluded.batch_settled_charges,
        batch_released_charges = t.batch_released_charges + excluded.batch_released_charges,
        batch_spend_micros = t.batch_spend_micros + excluded.batch_spend_micros;
  with delta as (
    select c.pool_id, (c.created_at at time zone 'UTC')::date as day, c.workspace_id, m.key as mkey, m.value as mvalue, c.sign,
           (c.batch_id is not null)::int as batch, (c.status = 'settled')::int as settled,
           (c.status = 'released')::int as released, coalesce(c.settled_micros, 0) as spend
    from (select a.*, 1 as sign from unnest(p_added) a
          union all
          select r.*, -1 from unnest(p_removed) r) c
    cross join lateral jsonb_each_text(case when jsonb_typeof(c.metadata) = 'object' then c.metadata end) m
    where c.status <> 'reserved' and m.value is not null
  ), summed as (
    select pool_id, day, mkey, mvalue, workspace_id,
           sum(sign)::bigint as charges, sum(sign * settled)::bigint as settled, sum(sign * released)::bigint as released,
           sum(sign * spend)::bigint as spend,
           sum(sign * batch)::bigint as b_charges, sum(sign * batch * settled)::bigint as b_settled,
           sum(sign * batch * released)::bigint as b_released, sum(sign * batch * spend)::bigint as b_spend
    from delta
    group by pool_id, day, mkey, mvalue, workspace_id
  )
  insert into kiln_private.charge_metadata_days as t
    (pool_id, day, mkey, mvalue, workspace_id, charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, day, mkey, mvalue, workspace_id, charges, settled, released, spend, b_charges, b_settled, b_released, b_spend
  from summed
  where charges <> 0 or settled <> 0 or released <> 0 or spend <> 0
     or b_charges <> 0 or b_settled <> 0 or b_released <> 0 or b_spend <> 0
  order by pool_id, day, mkey collate "C", mvalue collate "C"
  on conflict (pool_id, day, mkey, mvalue) do update
    set charges = t.charges + excluded.charges,
        settled_charges = t.settled_charges + excluded.settled_charges,
        released_charges = t.released_charges + excluded.released_charges,
        spend_micros = t.spend_micros + excluded.spend_micros,
        batch_charges = t.batch_charges + excluded.batch_charges,
        batch_settled_charges = t.batch_settled_charges + excluded.batch_settled_charges,
        batch_released_charges = t.batch_released_charges + excluded.batch_released_charges,
        batch_spend_micros = t.batch_spend_micros + excluded.batch_spend_micros;
  -- What each attribute's groups add up to per day: 'endUser', and 'metadata.<key>' per key.
  with delta as (
    select c.pool_id, (c.created_at at time zone 'UTC')::date as day, a.attribute, c.sign,
           (c.batch_id is not null)::int as batch, (c.status = 'settled')::int as settled,
           (c.status = 'released')::int as released, coalesce(c.settled_micros, 0) as spend
    from (select a.*, 1 as sign from unnest(p_added) a
          union all
          select r.*, -1 from unnest(p_removed) r) c
    cross join lateral (select 'endUser' as attribute where c.end_user is not null
                        union all
                        select 'metadata.' || m.key from jsonb_each_text(case when jsonb_typeof(c.metadata) = 'object' then c.metadata end) m
                        where m.value is not null) a
    where c.status <> 'reserved'
  ), summed as (
    select pool_id, day, attribute,
           sum(sign)::bigint as charges, sum(sign * settled)::bigint as settled, sum(sign * released)::bigint as released,
           sum(sign * spend)::bigint as spend,
           sum(sign * batch)::bigint as b_charges, sum(sign * batch * settled)::bigint as b_settled,
           sum(sign * batch * released)::bigint as b_released, sum(sign * batch * spend)::bigint as b_spend
    from delta
    group by pool_id, day, attribute
  )
  insert into kiln_private.charge_attribute_days as t
    (pool_id, day, attribute, charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, day, attribute, charges, settled, released, spend, b_charges, b_settled, b_released, b_spend
  from summed
  where charges <> 0 or settled <> 0 or released <> 0 or spend <> 0
     or b_charges <> 0 or b_settled <> 0 or b_released <> 0 or b_spend <> 0
  order by pool_id, day, attribute collate "C"
  on conflict (pool_id, day, attribute) do update
    set charges = t.charges + excluded.charges,
        settled_charges = t.settled_charges + excluded.settled_charges,
        released_charges = t.released_charges + excluded.released_charges,
        spend_micros = t.spend_micros + excluded.spend_micros,
        batch_charges = t.batch_charges + excluded.batch_charges,
        batch_settled_charges = t.batch_settled_charges + excluded.batch_settled_charges,
        batch_released_charges = t.batch_released_charges + excluded.batch_released_charges,
        batch_spend_micros = t.batch_spend_micros + excluded.batch_spend_micros;
end;
$function$;
comment on function kiln_private.roll_up_charges(kiln_private.charges[],kiln_private.charges[]) is 'Adds the contribution of the ended (settled or released) rows of p_added to kiln_private.charge_days and subtracts that of p_removed (the old versions of changed rows), with the part of batch lines (batch_id set) in the batch_* columns, one upsert per group, groups in key order. Open reservations contribute nothing. The same for charges with an end user or metadata, into kiln_private.charge_end_user_days, charge_end_user_months, charge_metadata_days (one row per pair) and charge_attribute_days (per attribute, the sum of its groups).';
-- end of db/functions/kiln_private.roll_up_charges.sql
-- included from db/functions/kiln_private.rebuild_charge_days.sql
-- functions/kiln_private.rebuild_charge_days.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.rebuild_charge_days.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

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
     charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, period_start, (created_at at time zone 'UTC')::date, account_id, workspace_id, key_id, model_id, origin,
         count(*), count(*) filter (where status = 'settled'), count(*) filter (where status = 'released'),
         coalesce(sum(settled_micros), 0)::bigint,
         count(*) filter (where batch_id is not null),
         count(*) filter (where batch_id is not null and status = 'settled'),
         count(*) filter (where batch_id is not null and status = 'released'),
         coalesce(sum(settled_micros) filter (where batch_id is not null), 0)::bigint
  from kiln_private.charges
  where status <> 'reserved'
  group by pool_id, period_start, (created_at at time zone 'UTC')::date, account_id, workspace_id, key_id, model_id, origin;
  get diagnostics v_rows = row_count;
  -- The roll-ups by attribution (docs/usage.md, "Usage by end user and by metadata"), alike.
  delete from kiln_private.charge_end_user_days;
  delete from kiln_private.charge_end_user_months;
  delete from kiln_private.charge_metadata_days;
  delete from kiln_private.charge_attribute_days;
  insert into kiln_private.charge_end_user_days
    (pool_id, day, end_user, workspace_id, charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, (created_at at time zone 'UTC')::date, end_user, min(workspace_id::text)::uuid,
         count(*), count(*) filter (where status = 'settled'), count(*) filter (where status = 'released'),
         coalesce(sum(settled_micros), 0)::bigint,
         count(*) filter (where batch_id is not null),
         count(*) filter (where batch_id is not null and status = 'settled'),
         count(*) filter (where batch_id is not null and status = 'released'),
         coalesce(sum(settled_micros) filter (where batch_id is not null), 0)::bigint
  from kiln_private.charges
  where status <> 'reserved' and end_user is not null
  group by pool_id, (created_at at time zone 'UTC')::date, end_user;
  insert into kiln_private.charge_end_user_months
    (pool_id, month, end_user, workspace_id, charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, date_trunc('month', day)::date, end_user, min(workspace_id::text)::uuid,
         sum(charges), sum(settled_charges), sum(released_charges), sum(spend_micros),
         sum(batch_charges), sum(batch_settled_charges), sum(batch_released_charges), sum(batch_spend_micros)
  from kiln_private.charge_end_user_days
  group by pool_id, date_trunc('month', day)::date, end_user;
  insert into kiln_private.charge_metadata_days
    (pool_id, day, mkey, mvalue, workspace_id, charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select c.pool_id, (c.created_at at time zone 'UTC')::date, m.key, m.value, min(c.workspace_id::text)::uuid,
         count(*), count(*) filter (where c.status = 'settled'), count(*) filter (where c.status = 'released'),
         coalesce(sum(c.settled_micros), 0)::bigint,
         count(*) filter (where c.batch_id is not null),
         count(*) filter (where c.batch_id is not null and c.status = 'settled'),
         count(*) filter (where c.batch_id is not null and c.status = 'released'),
         coalesce(sum(c.settled_micros) filter (where c.batch_id is not null), 0)::bigint
  from kiln_private.charges c
  cross join lateral jsonb_each_text(case when jsonb_typeof(c.metadata) = 'object' then c.metadata end) m
  where c.status <> 'reserved' and m.value is not null
  group by c.pool_id, (c.created_at at time zone 'UTC')::date, m.key, m.value;
  insert into kiln_private.charge_attribute_days
    (pool_id, day, attribute, charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, day, 'endUser', sum(charges), sum(settled_charges), sum(released_charges), sum(spend_micros),
         sum(batch_charges), sum(batch_settled_charges), sum(batch_released_charges), sum(batch_spend_micros)
  from kiln_private.charge_end_user_days
  group by pool_id, day
  union all
  select c.pool_id, (c.created_at at time zone 'UTC')::date, 'metadata.' || m.key,
         count(*), count(*) filter (where c.status = 'settled'), count(*) filter (where c.status = 'released'),
         coalesce(sum(c.settled_micros), 0)::bigint,
         count(*) filter (where c.batch_id is not null),
         count(*) filter (where c.batch_id is not null and c.status = 'settled'),
         count(*) filter (where c.batch_id is not null and c.status = 'released'),
         coalesce(sum(c.settled_micros) filter (where c.batch_id is not null), 0)::bigint
  from kiln_private.charges c
  cross join lateral jsonb_each_text(case when jsonb_typeof(c.metadata) = 'object' then c.metadata end) m
  where c.status <> 'reserved' and m.value is not null
  group by c.pool_id, (c.created_at at time zone 'UTC')::date, 'metadata.' || m.key;
  return v_rows;
end;
$function$;
comment on function kiln_private.rebuild_charge_days() is 'Recomputes kiln_private.charge_days from the whole ledger (under a share lock on kiln_private.charges, so no charge changes meanwhile). Rebuilds the roll-ups by attribution (charge_end_user_days, charge_end_user_months, charge_metadata_days, charge_attribute_days) alike. Returns charge_days'' row count. For migrations and repair; the triggers keep it exact otherwise.';
-- end of db/functions/kiln_private.rebuild_charge_days.sql
-- included from db/functions/kiln.get_daily_usage_groups.sql
-- functions/kiln.get_daily_usage_groups.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_daily_usage_groups.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_daily_usage_groups(p_account_id uuid, p_workspace_id uuid, p_from date, p_to date, p_group_by text, p_limit integer, p_after_day date, p_after_spend bigint, p_after_group text, p_after_null boolean)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_body json;
  v_visible boolean := true;
  v_pool uuid := coalesce(p_workspace_id, p_account_id);
  v_from date;
  v_to date;
  v_key text;
  v_rollup text;
  v_col text;
  v_keyfilter text := '';
  v_open text;
  v_after text := '';
  v_rows json;
  v_n int;
  v_next json;
begin
  if p_group_by is null or p_group_by !~ '^(endUser|metadata\.[A-Za-z0-9_.:-]{1,64})$' then
    raise exception 'groupBy must be endUser or metadata.<key>' using errcode = 'KI001';
  end if;
  if p_limit is null or p_limit < 1 or p_limit > 1000 then
    raise exception 'limit must be from 1 to 1000' using errcode = 'KI001';
  end if;
  -- The body of GET /usage/daily (its days are the totals the groups add up to), its range resolved.
  v_body := kiln.get_daily_usage(p_account_id, p_workspace_id, p_from, p_to);
  if v_body is null then
    return null;
  end if;
  v_from := (v_body->>'from')::date;
  v_to := (v_body->>'to')::date;
  if p_workspace_id is not null then
    v_visible := exists (select 1 from kiln_private.workspace_members m
                         where m.workspace_id = p_workspace_id and m.account_id = p_account_id and m.left_at is null);
  end if;
  if p_group_by = 'endUser' then
    v_rollup := 'kiln_private.charge_end_user_days';
    v_col := 'r.end_user';
    v_open := 'c.end_user';
  else
    v_key := substr(p_group_by, 10);
    v_rollup := 'kiln_private.charge_metadata_days';
    v_col := 'r.mvalue';
    v_keyfilter := 'and r.mkey = $6';
    v_open := 'c.metadata->>$6';
  end if;
  -- Keyset position in (day, spend desc, group with null last), as the index reads the rollup.
  if p_after_day is not null then
    v_after := case when p_after_null then format('and (r.day, (- r.spend_micros)) > ($9, (- $10))')
                    else format('and (r.day, (- r.spend_micros), %s) > ($9, (- $10), $11)', v_col) end;
  end if;
  if v_visible then
    execute format($q$
      with open as materialized (
        -- Reservations in flight (charges_open_idx), at their reserved amount, per day and group.
        select (c.created_at at time zone 'UTC')::date as day, (%4$s) collate "C" as grp,
               count(*)::bigint as n, sum(c.reserved_micros)::bigint as held,
               count(c.batch_id)::bigint as b_n,
               coalesce(sum(c.reserved_micros) filter (where c.batch_id is not null), 0)::bigint as b_held
        from kiln_private.charges c
        where c.status = 'reserved' and c.pool_id = $1 and c.created_at >= $4 and c.created_at < $5
        group by 1, 2
      ), totals as (
        -- The day's total, as GET /usage/daily's days add up to it.
        select d.day, sum(d.spend)::bigint as spend, sum(d.charges)::bigint as charges, sum(d.held)::bigint as held,
               sum(d.b_spend)::bigint as b_spend, sum(d.b_charges)::bigint as b_charges, sum(d.b_held)::bigint as b_held
        from (select r.day, r.spend_micros as spend, r.settled_charges as charges, 0::bigint as held,
                     r.batch_spend_micros as b_spend, r.batch_settled_charges as b_charges, 0::bigint as b_held
              from kiln_private.charge_days r where r.pool_id = $1 and r.day between $2 and $3
              union all
              select o.day, o.held, o.n, o.held, o.b_held, o.b_n, o.b_held from open o) d
        group by d.day
      ), grouped as (
        -- What the day's groups add up to.
        select d.day, sum(d.spend)::bigint as spend, sum(d.charges)::bigint as charges, sum(d.held)::bigint as held,
               sum(d.b_spend)::bigint as b_spend, sum(d.b_charges)::bigint as b_charges, sum(d.b_held)::bigint as b_held
        from (select a.day, a.spend_micros as spend, a.settled_charges as charges, 0::bigint as held,
                     a.batch_spend_micros as b_spend, a.batch_settled_charges as b_charges, 0::bigint as b_held
              from kiln_private.charge_attribute_days a where a.pool_id = $1 and a.attribute = $7 and a.day between $2 and $3
              union all
              select o.day, o.held, o.n, o.held, o.b_held, o.b_n, o.b_held from open o where o.grp is not null) d
        group by d.day
      ), extra as (
        -- The null group: the day's total minus its groups.
        select t.day, null::text collate "C" as grp, t.spend - coalesce(g.spend, 0) as spend, t.charges - coalesce(g.charges, 0) as charges,
               t.held - coalesce(g.held, 0) as held, t.b_spend - coalesce(g.b_spend, 0) as b_spend,
               t.b_charges - coalesce(g.b_charges, 0) as b_charges, t.b_held - coalesce(g.b_held, 0) as b_held
        from totals t left join grouped g on g.day = t.day
        where t.charges - coalesce(g.charges, 0) > 0
        union all
        -- Groups with reservations in flight: their rollup row plus what they hold.
        select o.day, o.grp, coalesce(r.spend_micros, 0) + o.held, coalesce(r.settled_charges, 0) + o.n, o.held,
               coalesce(r.batch_spend_micros, 0) + o.b_held, coalesce(r.batch_settled_charges, 0) + o.b_n, o.b_held
        from open o left join %1$s r on r.pool_id = $1 and r.day = o.day and %2$s = o.grp %3$s
        where o.grp is not null
      ), page as (
        (select e.* from extra e
         where $9 is null or e.day > $9
            or (e.day = $9 and (e.spend < $10 or (e.spend = $10 and not $12 and (e.grp is null or e.grp > $11)))))
        union all
        -- Every other group straight from the rollup, in the index's order: a page reads a page.
        (select r.day, %2$s, r.spend_micros, r.settled_charges, 0::bigint,
                r.batch_spend_micros, r.batch_settled_charges, 0::bigint
         from %1$s r
         where r.pool_id = $1 %3$s and r.day between $2 and $3 and r.settled_charges > 0 %5$s
           and (r.day, %2$s) not in (select o.day, o.grp from open o where o.grp is not null)
         order by r.day, (- r.spend_micros), %2$s
         limit $8 + 1)
      )
      select json_agg(json_build_object(
               'day', to_char(x.day, 'YYYY-MM-DD'), 'group', x.grp,
               'spend_micros', x.spend, 'charges', x.charges, 'held_micros', x.held,
               'batch', json_build_object('spend_micros', x.b_spend, 'charges', x.b_charges, 'held_micros', x.b_held),
               'interactive', json_build_object('spend_micros', x.spend - x.b_spend, 'charges', x.charges - x.b_charges,
                                                'held_micros', x.held - x.b_held)) order by x.ord),
             count(*)
      from (select p.*, row_number() over (order by p.day, p.spend desc, p.grp nulls last) as ord
            from page p order by p.day, p.spend desc, p.grp nulls last limit $8 + 1) x
      $q$, v_rollup, v_col, v_keyfilter, v_open, v_after)
    into v_rows, v_n
    using v_pool, v_from, v_to, (v_from::timestamp at time zone 'UTC'), ((v_to + 1)::timestamp at time zone 'UTC'),
          v_key, p_group_by, p_limit, p_after_day, p_after_spend, p_after_group, coalesce(p_after_null, false);
  end if;
  v_rows := coalesce(v_rows, '[]');
  if coalesce(v_n, 0) > p_limit then
    -- The position of the page's last row; the extra row only says there is more.
    v_next := json_build_object('day', v_rows->(p_limit - 1)->>'day', 'spend', (v_rows->(p_limit - 1)->>'spend_micros')::bigint,
                                'group', v_rows->(p_limit - 1)->>'group');
    select json_agg(e order by i) into v_rows from json_array_elements(v_rows) with ordinality t(e, i) where i <= p_limit;
  end if;
  return json_build_object(
    'scope', v_body->'scope', 'workspace_id', v_body->'workspace_id', 'from', v_body->'from', 'to', v_body->'to',
    'days', v_body->'days', 'groupBy', p_group_by, 'groups', v_rows, 'next', v_next);
end;
$function$;
comment on function kiln.get_daily_usage_groups(uuid,uuid,date,date,text,integer,date,bigint,text,boolean) is 'GET /usage/daily?groupBy=: kiln.get_daily_usage''s body plus groupBy, groups (per UTC day and group — an end user, or a value of one metadata key — spend_micros, charges and held_micros as the days count them, with the batch and interactive parts; group null: the charges without the attribute, the day''s total minus its groups, so a day''s groups add up exactly to its days) and next (the position after the page, or null). Ordered by day, spend descending, group (null last); a keyset page after (p_after_day, p_after_spend, p_after_group or p_after_null) read from the rollups (charge_end_user_days, charge_metadata_days, charge_attribute_days) in index order, plus the open reservations (charges_open_idx). Null when the account (or workspace) does not exist; no groups for a workspace the caller is no longer a member of. KI001 for a bad groupBy or limit (1 to 1000), or a bad range.';
-- end of db/functions/kiln.get_daily_usage_groups.sql
-- included from db/functions/kiln.get_daily_usage_groups_for_keys.sql
-- functions/kiln.get_daily_usage_groups_for_keys.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_daily_usage_groups_for_keys.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_daily_usage_groups_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_froms date[], p_tos date[], p_group_bys text[], p_limits integer[], p_after_days date[], p_after_spends bigint[], p_after_groups text[], p_after_nulls boolean[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select r.*,
         case when r.status <> 'ok' then null
              when p_group_bys[r.ord] is null then kiln.get_daily_usage(r.account_id, r.workspace_id, p_froms[r.ord], p_tos[r.ord])
              else kiln.get_daily_usage_groups(r.account_id, r.workspace_id, p_froms[r.ord], p_tos[r.ord], p_group_bys[r.ord],
                                               p_limits[r.ord], p_after_days[r.ord], p_after_spends[r.ord], p_after_groups[r.ord],
                                               p_after_nulls[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.get_daily_usage_groups_for_keys(bytea[],integer,date[],date[],text[],integer[],date[],bigint[],text[],boolean[]) is 'GET /usage/daily (with or without groupBy) for a batch in one transaction: authorizes each key (read scope, the per-key read bucket at p_read_rpm and the key''s own rpm) and, when admitted, returns the daily usage of its billing scope: kiln.get_daily_usage without a groupBy, kiln.get_daily_usage_groups with one (the caller checks the range, groupBy and limit first).';
-- end of db/functions/kiln.get_daily_usage_groups_for_keys.sql
-- included from db/functions/kiln.get_daily_usage_groups_for_callers.sql
-- functions/kiln.get_daily_usage_groups_for_callers.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_daily_usage_groups_for_callers.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_daily_usage_groups_for_callers(p_account_ids uuid[], p_workspace_ids uuid[], p_froms date[], p_tos date[], p_group_bys text[], p_limits integer[], p_after_days date[], p_after_spends bigint[], p_after_groups text[], p_after_nulls boolean[])
 RETURNS TABLE(ord integer, body json)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select c.ord::int,
         case when p_group_bys[c.ord] is null then kiln.get_daily_usage(c.account_id, p_workspace_ids[c.ord], p_froms[c.ord], p_tos[c.ord])
              else kiln.get_daily_usage_groups(c.account_id, p_workspace_ids[c.ord], p_froms[c.ord], p_tos[c.ord], p_group_bys[c.ord],
                                               p_limits[c.ord], p_after_days[c.ord], p_after_spends[c.ord], p_after_groups[c.ord],
                                               p_after_nulls[c.ord]) end
  from unnest(p_account_ids) with ordinality c(account_id, ord);
$function$;
comment on function kiln.get_daily_usage_groups_for_callers(uuid[],uuid[],date[],date[],text[],integer[],date[],bigint[],text[],boolean[]) is 'GET /usage/daily (with or without groupBy) for a batch of callers already authorized: kiln.get_daily_usage, or kiln.get_daily_usage_groups with a groupBy, of each one''s billing scope, by 1-based ord. Read-only: runs on a streaming replica.';
-- end of db/functions/kiln.get_daily_usage_groups_for_callers.sql
-- included from db/functions/kiln.list_end_users.sql
-- functions/kiln.list_end_users.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_end_users.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_end_users(p_account_id uuid, p_workspace_id uuid, p_from date, p_to date, p_limit integer, p_after_used bigint, p_after_end_user text)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_pool uuid := coalesce(p_workspace_id, p_account_id);
  v_visible boolean := true;
  v_month boolean;
  v_rows json;
  v_n int;
  v_next json;
begin
  if p_from is null or p_to is null or p_from > p_to or p_to - p_from > 365 then
    raise exception 'from must not be after to, and the range at most 366 days' using errcode = 'KI001';
  end if;
  if p_limit is null or p_limit < 1 or p_limit > 1000 then
    raise exception 'limit must be from 1 to 1000' using errcode = 'KI001';
  end if;
  if p_workspace_id is null then
    if not exists (select 1 from kiln_private.accounts a where a.id = p_account_id) then
      return null;
    end if;
  else
    -- A workspace's end users are shown to its current members only.
    select exists (select 1 from kiln_private.workspace_members m
                   where m.workspace_id = w.id and m.account_id = p_account_id and m.left_at is null)
      into v_visible
      from kiln_private.workspaces w where w.id = p_workspace_id;
    if not found then
      return null;
    end if;
  end if;
  -- A whole calendar month reads the month's rollup in spend order; any other range sums its days.
  v_month := p_from = date_trunc('month', p_from)::date and p_to = (date_trunc('month', p_from) + interval '1 month - 1 day')::date;
  if v_visible then
    execute format($q$
      with open as materialized (
        -- Reservations in flight (charges_open_idx), at their reserved amount, per end user.
        select c.end_user collate "C" as grp, count(*)::bigint as n, sum(c.reserved_micros)::bigint as held
        from kiln_private.charges c
        where c.status = 'reserved' and c.pool_id = $1 and c.created_at >= $4 and c.created_at < $5 and c.end_user is not null
        group by 1
      ), listed as (%s)
      select json_agg(json_build_object('endUser', x.grp, 'usedMicros', x.used, 'generations', x.gens) order by x.used desc, x.grp),
             count(*)
      from (select l.grp, l.used, l.gens from listed l order by l.used desc, l.grp limit $6 + 1) x
      $q$,
      case when v_month then format($m$
        (select o.grp, coalesce(m.spend_micros, 0) + o.held as used, coalesce(m.settled_charges, 0) + o.n as gens
         from open o left join kiln_private.charge_end_user_months m on m.pool_id = $1 and m.month = $2 and m.end_user = o.grp
         where $7 is null or coalesce(m.spend_micros, 0) + o.held < $7
            or (coalesce(m.spend_micros, 0) + o.held = $7 and o.grp > $8))
        union all
        -- Every other end user straight from the month's rollup, in the index's order.
        (select m.end_user, m.spend_micros, m.settled_charges
         from kiln_private.charge_end_user_months m
         where m.pool_id = $1 and m.month = $2 and m.settled_charges > 0 %s
           and m.end_user not in (select o.grp from open o)
         order by (- m.spend_micros), m.end_user
         limit $6 + 1)$m$,
        case when p_after_used is not null then 'and ((- m.spend_micros), m.end_user) > ((- $7), $8)' else '' end)
      else $d$
        select s.grp, s.used, s.gens
        from (select d.grp, sum(d.spend)::bigint as used, sum(d.charges)::bigint as gens
              from (select r.end_user as grp, r.spend_micros as spend, r.settled_charges as charges
                    from kiln_private.charge_end_user_days r
                    where r.pool_id = $1 and r.day between $2 and $3 and r.settled_charges > 0
                    union all
                    select o.grp, o.held, o.n from open o) d
              group by d.grp) s
        where $7 is null or s.used < $7 or (s.used = $7 and s.grp > $8)$d$ end)
    into v_rows, v_n
    using v_pool, p_from, p_to, (p_from::timestamp at time zone 'UTC'), ((p_to + 1)::timestamp at time zone 'UTC'),
          p_limit, p_after_used, p_after_end_user;
  end if;
  v_rows := coalesce(v_rows, '[]');
  if coalesce(v_n, 0) > p_limit then
    v_next := json_build_object('used', (v_rows->(p_limit - 1)->>'usedMicros')::bigint, 'endUser', v_rows->(p_limit - 1)->>'endUser');
    select json_agg(e order by i) into v_rows from json_array_elements(v_rows) with ordinality t(e, i) where i <= p_limit;
  end if;
  return json_build_object('data', v_rows, 'next', v_next);
end;
$function$;
comment on function kiln.list_end_users(uuid,uuid,date,date,integer,bigint,text) is 'GET /end-users: the end users of the caller''s billing scope (the personal pool, or a workspace-bound caller''s Team pool) with charges on the UTC days p_from..p_to, {endUser, usedMicros (settled charges at their cost plus reservations in flight at their reserved amount), generations (charges counted: settled and in flight)}, by usedMicros descending then endUser; a keyset page after (p_after_used, p_after_end_user): {data, next}. A whole calendar month reads kiln_private.charge_end_user_months in index order (a page reads a page); another range sums charge_end_user_days over it. Null when the account (or workspace) does not exist; no end users for a workspace the caller is no longer a member of. KI001 for a bad range or limit (1 to 1000).';
-- end of db/functions/kiln.list_end_users.sql
-- included from db/functions/kiln.list_end_users_for_keys.sql
-- functions/kiln.list_end_users_for_keys.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_end_users_for_keys.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_end_users_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_froms date[], p_tos date[], p_limits integer[], p_after_useds bigint[], p_after_end_users text[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select r.*, case when r.status = 'ok' then kiln.list_end_users(r.account_id, r.workspace_id, p_froms[r.ord], p_tos[r.ord], p_limits[r.ord],
                                                                 p_after_useds[r.ord], p_after_end_users[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.list_end_users_for_keys(bytea[],integer,date[],date[],integer[],bigint[],text[]) is 'GET /end-users for a batch in one transaction: authorizes each key (read scope, the per-key read bucket at p_read_rpm and the key''s own rpm) and, when admitted, returns its billing scope''s page of end users (kiln.list_end_users; the caller checks the range and limit first).';
-- end of db/functions/kiln.list_end_users_for_keys.sql
-- included from db/functions/kiln.list_end_users_for_callers.sql
-- functions/kiln.list_end_users_for_callers.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_end_users_for_callers.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_end_users_for_callers(p_account_ids uuid[], p_workspace_ids uuid[], p_froms date[], p_tos date[], p_limits integer[], p_after_useds bigint[], p_after_end_users text[])
 RETURNS TABLE(ord integer, body json)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select c.ord::int, kiln.list_end_users(c.account_id, p_workspace_ids[c.ord], p_froms[c.ord], p_tos[c.ord], p_limits[c.ord],
                                         p_after_useds[c.ord], p_after_end_users[c.ord])
  from unnest(p_account_ids) with ordinality c(account_id, ord);
$function$;
comment on function kiln.list_end_users_for_callers(uuid[],uuid[],date[],date[],integer[],bigint[],text[]) is 'GET /end-users for a batch of callers already authorized: each one''s page of end users (kiln.list_end_users), by 1-based ord. Read-only: runs on a streaming replica.';
-- end of db/functions/kiln.list_end_users_for_callers.sql
-- included from db/views/kiln.usage_by_end_user.sql
-- views/kiln.usage_by_end_user.sql: the current definition. Edit it here, and ship the change with
-- `--! include views/kiln.usage_by_end_user.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

create or replace view kiln.usage_by_end_user as
 SELECT day,
    account_id,
    workspace_id,
    end_user,
    sum(charges)::bigint AS charges,
    sum(settled_charges)::bigint AS settled_charges,
    sum(released_charges)::bigint AS released_charges,
    sum(open_reservations)::bigint AS open_reservations,
    sum(spend_micros)::bigint AS spend_micros,
    sum(held_micros)::bigint AS held_micros,
    sum(batch_charges)::bigint AS batch_charges,
    sum(batch_spend_micros)::bigint AS batch_spend_micros,
    sum(batch_held_micros)::bigint AS batch_held_micros
   FROM ( SELECT r.day,
                CASE
                    WHEN r.workspace_id IS NULL THEN r.pool_id
                    ELSE NULL::uuid
                END AS account_id,
            r.workspace_id,
            r.end_user,
            r.charges,
            r.settled_charges,
            r.released_charges,
            0::bigint AS open_reservations,
            r.spend_micros,
            0::bigint AS held_micros,
            r.batch_charges,
            r.batch_spend_micros,
            0::bigint AS batch_held_micros
           FROM kiln_private.charge_end_user_days r
        UNION ALL
         SELECT (c.created_at AT TIME ZONE 'UTC'::text)::date AS day,
                CASE
                    WHEN c.workspace_id IS NULL THEN c.pool_id
                    ELSE NULL::uuid
                END AS account_id,
            c.workspace_id,
            c.end_user,
            1,
            0,
            0,
            1,
            0,
            c.reserved_micros,
            (c.batch_id IS NOT NULL)::integer AS int4,
            0,
                CASE
                    WHEN c.batch_id IS NOT NULL THEN c.reserved_micros
                    ELSE 0::bigint
                END AS "case"
           FROM kiln_private.charges c
          WHERE c.status = 'reserved'::text AND c.end_user IS NOT NULL) d
  GROUP BY day, account_id, workspace_id, end_user
 HAVING sum(charges) > 0::numeric;
comment on view kiln.usage_by_end_user is 'Spend per UTC day, billing scope and end user (the app''s endUser): account_id is the account of a personal budget (null for a Team pool''s rows), workspace_id the Team pool (null = personal budget). Charge counts by state, settled spend and still-held reservations in microdollars, and the batch part. Only charges with an end user; per day, the rest of kiln.daily_spend is the charges without one. Reads the kiln_private.charge_end_user_days rollup plus the open reservations (charges_open_idx).';
-- end of db/views/kiln.usage_by_end_user.sql
grant select on kiln.usage_by_end_user to kiln_analyst;

-- The new roll-ups from the existing ledger (charge_days is recomputed alike).
select kiln_private.rebuild_charge_days();

--! split: 4-batch-perf.sql
-- Batches: accepted a chunk at a time in one transaction, each catalog entry stored once per batch
-- (docs/api.md, "Batches").
alter table kiln_private.batches add column if not exists models jsonb;
comment on column kiln_private.batches.models is 'The catalog entries its lines run with (batch-priced), by key: a line''s stored request names its model and fallbacks by these keys (kiln_private.batch_line_request). Null for batches whose lines hold their entries themselves.';

-- included from db/functions/kiln_private.batch_line_request.sql
-- functions/kiln_private.batch_line_request.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.batch_line_request.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.batch_line_request(p_request jsonb, p_models jsonb)
 RETURNS jsonb
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select case when jsonb_typeof(p_request->'model') is distinct from 'string' then p_request
    else p_request
      || jsonb_build_object('model', p_models->(p_request->>'model'))
      || case when jsonb_typeof(p_request->'fallbacks') = 'array' then jsonb_build_object('fallbacks',
           (select coalesce(jsonb_agg(p_models->f.k order by f.i), '[]'::jsonb)
              from jsonb_array_elements_text(p_request->'fallbacks') with ordinality as f(k, i)))
         else '{}'::jsonb end
  end;
$function$;
comment on function kiln_private.batch_line_request(jsonb,jsonb) is 'A batch line''s request as the worker executes it: its model and fallbacks, stored as keys of the batch''s models (kiln.add_batch_lines), replaced by the catalog entries they name. A request that holds its entries itself (a line made by kiln.create_batch) is returned as it is.';
-- end of db/functions/kiln_private.batch_line_request.sql
-- included from db/functions/kiln.open_batch.sql
-- functions/kiln.open_batch.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.open_batch.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.open_batch(p_account_id uuid, p_workspace_id uuid, p_key_id uuid, p_total integer, p_idem_key text DEFAULT NULL::text, p_fingerprint bytea DEFAULT NULL::bytea, p_idem_ttl_seconds integer DEFAULT 86400, p_expires_seconds integer DEFAULT 86400)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid := kiln_private.uuid_v7();
  v_claim record;
  v_b kiln_private.batches;
  v_require boolean;
begin
  if p_total is null or p_total < 1 or p_total > 50000 then
    raise exception 'a batch has 1 to 50000 lines' using errcode = '22023';
  end if;
  v_require := exists (select 1 from kiln_private.api_keys k where k.id = p_key_id and k.require_end_user);
  if p_idem_key is not null then
    select * into v_claim from kiln_private.claim_idempotency_keys(array[p_account_id], array['POST /batches'], array[p_idem_key],
      array[p_fingerprint], array[202], array[jsonb_build_object('id', v_id)], p_idem_ttl_seconds);
    if v_claim.outcome = 'conflict' then
      return json_build_object('outcome', 'conflict', 'require_end_user', v_require);
    elsif v_claim.outcome = 'pending' then
      return json_build_object('outcome', 'pending', 'require_end_user', v_require);
    elsif v_claim.outcome in ('replay', 'follower') then
      select * into v_b from kiln_private.batches where id = (v_claim.response_body->>'id')::uuid;
      return json_build_object('outcome', 'replayed', 'require_end_user', v_require, 'batch', kiln_private.batch_body(v_b));
    end if;
  end if;
  -- No line is queued before kiln.close_batch (the same transaction): nothing runs before every
  -- line is in, and a failure on the way leaves nothing.
  insert into kiln_private.batches (id, account_id, workspace_id, key_id, scope_id, total, expires_at, models)
    values (v_id, p_account_id, p_workspace_id, p_key_id, coalesce(p_workspace_id, p_account_id), p_total,
            now() + make_interval(secs => p_expires_seconds), '{}'::jsonb);
  return json_build_object('outcome', 'opened', 'id', v_id, 'require_end_user', v_require);
end;
$function$;
comment on function kiln.open_batch(uuid,uuid,uuid,integer,text,bytea,integer,integer) is 'POST /batches, in one transaction with kiln.add_batch_lines and kiln.close_batch: claims the Idempotency-Key (outcome replayed with the stored batch, conflict or pending) or inserts the batch row of p_total lines (outcome opened, with its id); require_end_user says whether the key was made with requireEndUser (every line must then name an endUser).';
-- end of db/functions/kiln.open_batch.sql
-- included from db/functions/kiln.add_batch_lines.sql
-- functions/kiln.add_batch_lines.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.add_batch_lines.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.add_batch_lines(p_batch_id uuid, p_account_id uuid, p_origin text, p_max_attempts integer, p_first_line integer, p_custom_ids text[], p_types text[], p_model_ids text[], p_requests jsonb, p_reserves bigint[], p_models jsonb DEFAULT NULL::jsonb)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_b kiln_private.batches;
  v_n int := coalesce(cardinality(p_custom_ids), 0);
begin
  select * into v_b from kiln_private.batches where id = p_batch_id and account_id = p_account_id for update;
  if not found or v_b.status <> 'in_progress' or v_b.next_line <> 0 then
    raise exception 'not a batch being created' using errcode = '22023';
  end if;
  if cardinality(p_types) <> v_n or cardinality(p_model_ids) <> v_n or jsonb_array_length(p_requests) <> v_n or cardinality(p_reserves) <> v_n then
    raise exception 'one type, model, request and reservation per line' using errcode = '22023';
  end if;
  if p_first_line < 1 or p_first_line + v_n - 1 > v_b.total then
    raise exception 'lines % to % are outside the batch''s % lines', p_first_line, p_first_line + v_n - 1, v_b.total using errcode = '22023';
  end if;
  if p_models is not null and p_models <> '{}'::jsonb then
    update kiln_private.batches set models = coalesce(models, '{}'::jsonb) || p_models where id = p_batch_id;
  end if;
  -- Set-based: no reservation and no job yet (each line reserves when it starts).
  insert into kiln_private.generations
    (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, charge_id, max_attempts, batch_id, batch_line, custom_id,
     end_user, metadata)
  select kiln_private.uuid_v7(), v_b.account_id, v_b.key_id, v_b.workspace_id, p_origin, u.m, u.t, r.r, u.res, null, p_max_attempts, p_batch_id,
         p_first_line + u.i::int - 1, u.c, r.r->>'endUser', nullif(r.r->'metadata', 'null'::jsonb)
  from unnest(p_custom_ids, p_types, p_model_ids, p_reserves) with ordinality as u(c, t, m, res, i)
  join jsonb_array_elements(p_requests) with ordinality as r(r, i) on r.i = u.i;
  return v_n;
end;
$function$;
comment on function kiln.add_batch_lines(uuid,uuid,text,integer,integer,text[],text[],text[],jsonb,bigint[],jsonb) is 'POST /batches: appends a chunk of validated lines (from line p_first_line) to a batch kiln.open_batch opened in this transaction, as pending generations (no reservation, no job). p_requests is a JSON array of the stored requests, each naming its model and fallbacks by a key of the batch''s models (p_models adds entries to it: each catalog entry is stored once per batch, not once per line).';
-- end of db/functions/kiln.add_batch_lines.sql
-- included from db/functions/kiln.close_batch.sql
-- functions/kiln.close_batch.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.close_batch.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.close_batch(p_batch_id uuid, p_account_id uuid)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_b kiln_private.batches;
begin
  select * into v_b from kiln_private.batches where id = p_batch_id and account_id = p_account_id for update;
  if not found or v_b.status <> 'in_progress' or v_b.next_line <> 0 then
    raise exception 'not a batch being created' using errcode = '22023';
  end if;
  -- Every line is in: 1 to total, each once (the unique index on batch_id, batch_line).
  if not exists (select 1 from kiln_private.generations g where g.batch_id = p_batch_id and g.batch_line = v_b.total)
     or exists (select 1 from kiln_private.generations g where g.batch_id = p_batch_id and g.batch_line = v_b.total + 1) then
    raise exception 'the batch does not have its % lines', v_b.total using errcode = '22023';
  end if;
  perform kiln_private.dispatch_batches(least(v_b.total, 1000));
  select * into v_b from kiln_private.batches where id = p_batch_id;
  return json_build_object('outcome', 'created', 'batch', kiln_private.batch_body(v_b));
end;
$function$;
comment on function kiln.close_batch(uuid,uuid) is 'POST /batches, last in the transaction kiln.open_batch began: checks that every line was added (kiln.add_batch_lines) and queues the first lines (kiln_private.dispatch_batches); returns the batch (outcome created).';
-- end of db/functions/kiln.close_batch.sql
-- included from db/functions/kiln.start_generation.sql
-- functions/kiln.start_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.start_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

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
  v_held boolean;
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
    -- A line of a batch canceled or expired meanwhile never starts (docs/api.md, "Batches").
    if v_gen.batch_id is not null and exists (select 1 from kiln_private.batches b
        where b.id = v_gen.batch_id and (b.status <> 'in_progress' or b.expired)) then
      perform kiln_private.end_generation(p_id, case when exists (select 1 from kiln_private.batches b where b.id = v_gen.batch_id and b.status <> 'in_progress')
        then 'canceled' else 'expired: the batch expired before this line started; nothing was charged' end);
      return json_build_object('outcome', 'done', 'status', 'failed', 'settled', true, 'type', v_gen.type, 'model_id', v_gen.model_id);
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
                                      -- A batch line waits in its lane (docs/api.md, "Batches").
                                      priority => case when v_gen.batch_id is null then 0 else 10 end,
                                      max_attempts => kiln_private.generation_job_attempts());
      return json_build_object('outcome', 'wait');
    end if;
  end if;

  -- An output held while the object store was down: the execution stores it, never calling the
  -- provider, so it is not an attempt.
  v_held := exists (select 1 from kiln_private.held_outputs h where h.generation_id = p_id);
  update kiln_private.generations
    set status = 'processing',
        waiting = false,
        -- A takeover replaces the cut-off execution: the attempt it was stays uncounted.
        attempts = attempts + case when v_crashed or v_held then 0 else 1 end,
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
    -- A batch line names its catalog entries by keys of its batch's models (kiln.add_batch_lines).
    'request', case when v_gen.batch_id is null then v_gen.request
                    else kiln_private.batch_line_request(v_gen.request, (select b.models from kiln_private.batches b where b.id = v_gen.batch_id)) end,
    'reserved', v_gen.charge_id is not null,
    'batch_id', v_gen.batch_id,
    'reserved_micros', v_gen.reserved_micros,
    'run_id', v_run_id,
    'output_node_id', v_gen.output_node_id,
    'held', v_held,
    -- A run output reads the results of the outputs it depends on.
    'upstream', case when v_run_id is not null then (
      select coalesce(json_object_agg(u.output_node_id, u.result), '{}'::json)
      from kiln_private.workflow_run_outputs u
      where u.run_id = v_run_id and u.output_node_id = any (v_out.refs) and u.status = 'completed') end);
end;
$function$;
comment on function kiln.start_generation(uuid,text,bigint,integer,integer,integer,integer) is 'Moves a generation (any origin) to processing for a worker''s job, respecting the account''s parallel slots and, for a run output, its run (outcome run, with the request, whether it holds an output the object store has yet to take, and, for a run output, its upstream results), or says why not: wait (slots full; re-queued for later), busy (a live worker runs it), superseded (a newer job holds its key and runs it), done (already settled, abandoned, expired, or failed here after p_max_crashes crashes in a row or for a blocked account: then settled true, with its type and model_id, for the caller to count), not_ready (a run output whose inputs are not settled), missing. Taking over from a dead worker counts a crash, not an attempt; an execution that only stores a held output counts neither; p_job_max_attempts is unused (kept for older callers).';
-- end of db/functions/kiln.start_generation.sql

-- Lines run in groups: one batch__run job starts, reserves and completes up to 10 lines of a
-- batch in one call each, and counts the batch once per group.
-- included from db/functions/kiln_private.count_batch_lines.sql
-- functions/kiln_private.count_batch_lines.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.count_batch_lines.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.count_batch_lines(p_batch_id uuid, p_left_queue integer, p_started boolean, p_completed integer, p_failed integer, p_canceled integer, p_spent_micros bigint)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- What kiln_private.tg_generations__batch does line by line, once for a group of lines.
  update kiln_private.batches b
    set in_queue = greatest(b.in_queue - p_left_queue, 0),
        started_at = case when p_started then coalesce(b.started_at, now()) else b.started_at end,
        completed = b.completed + p_completed,
        failed = b.failed + p_failed,
        canceled = b.canceled + p_canceled,
        spent_micros = b.spent_micros + p_spent_micros,
        updated_at = now()
    where b.id = p_batch_id;
  if p_completed + p_failed + p_canceled > 0 then
    perform kiln_private.finish_batch(p_batch_id);
    -- Their slots are free: the next lines (of whichever scope's turn it is) are queued.
    perform kiln_private.dispatch_batches(greatest(p_completed + p_failed + p_canceled, 10));
  end if;
end;
$function$;
comment on function kiln_private.count_batch_lines(uuid,integer,boolean,integer,integer,integer,bigint) is 'Counts a group of a batch''s lines at once (kiln.start_batch_lines, kiln.complete_batch_lines, with kiln.batch_bulk on): lines that left its queue, whether one started, those that ended (completed, failed, canceled) and what the completed ones cost; when any ended, may end the batch (kiln_private.finish_batch) and queues the next lines (kiln_private.dispatch_batches).';
-- end of db/functions/kiln_private.count_batch_lines.sql
-- included from db/functions/kiln_private.dispatch_batches.sql
-- functions/kiln_private.dispatch_batches.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.dispatch_batches.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.dispatch_batches(p_limit integer)
 RETURNS integer
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  return (select d.n from kiln_private.dispatch_batch_lines(p_limit, null) d);
end;
$function$;
comment on function kiln_private.dispatch_batches(integer) is 'Queues up to p_limit batch lines in groups (a batch__run job per group of consecutive lines, flagged batch: workers keep slots such jobs never take), round-robin by billing scope, within each account''s free parallel slots (kiln_private.batch_capacity), at priority 10 + the lines the scope already has queued: interactive work (priority 0) always starts first. A group is up to half the account''s slots (at most 10); a smaller one only when nothing of the account is queued or running. Returns how many lines it took.';
-- end of db/functions/kiln_private.dispatch_batches.sql
-- included from db/functions/kiln.start_batch_lines.sql
-- functions/kiln.start_batch_lines.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.start_batch_lines.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.start_batch_lines(p_batch_id uuid, p_from integer, p_to integer, p_worker_id text, p_job_id bigint, p_stale_seconds integer, p_wait_ms integer, p_max_crashes integer DEFAULT 10, p_takeover boolean DEFAULT false)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_b kiln_private.batches;
  v_gen kiln_private.generations;
  v_account kiln_private.accounts;
  v_free int;
  v_crashed boolean;
  v_ids uuid[] := '{}';
  v_crash boolean[] := '{}';
  v_rids uuid[];
  v_rcodes text[];
  v_rmsgs text[];
  v_i int;
  v_cids uuid[] := '{}';
  v_gids uuid[] := '{}';
  v_out json;
  v_left int := 0;
  v_started boolean := false;
  v_failed int := 0;
  v_canceled int := 0;
  v_locked boolean := false;
begin
  select * into v_b from kiln_private.batches where id = p_batch_id;
  if not found then
    return json_build_object('lines', '[]'::json);
  end if;
  -- Counted below at once (kiln_private.count_batch_lines), not line by line by the trigger.
  perform set_config('kiln.batch_bulk', 'on', true);
  -- Lines are locked before the batch row, as every worker's transaction does (no lock cycle).
  -- With p_takeover (a job's first call), also the lines this job had started beyond its own
  -- group (kiln.complete_batch_lines hands a running job further groups): after a crash its next
  -- run takes them over.
  for v_gen in
    select * from kiln_private.generations g
      where g.id in (
        select x.id from kiln_private.generations x
          where x.batch_id = p_batch_id and x.batch_line between p_from and p_to
        union
        select x.id from kiln_private.generations x
          where p_takeover and x.account_id = v_b.account_id and x.status = 'processing'
            and x.batch_id = p_batch_id and x.job_id = p_job_id)
      order by g.batch_line
      for update
  loop
    continue when v_gen.status in ('completed', 'failed');
    -- A line with a job of its own (a retry, a wait for a slot) is run by that job.
    continue when exists (select 1 from graphile_worker.jobs j where j.key = v_gen.id::text);
    v_crashed := false;
    if v_gen.status = 'processing' then
      if v_gen.worker_id = p_worker_id and v_gen.job_id = p_job_id then
        null; -- the same job again (its task failed and is retried): carry on
      elsif kiln_private.lease_held(v_gen.worker_id, v_gen.job_id, p_stale_seconds) then
        continue; -- a live worker runs it (a retry's own job): never twice
      else
        -- Its worker died during the execution: take it over, a crash and not an attempt (as
        -- kiln.start_generation does); p_max_crashes in a row fail it.
        v_crashed := true;
        if v_gen.crash_streak + 1 >= p_max_crashes then
          update kiln_private.generations
            set crashes = crashes + 1, crash_streak = crash_streak + 1, attempts = greatest(attempts - 1, 0), updated_at = now()
            where id = v_gen.id;
          perform kiln.fail_generation(v_gen.id, format(
            'the worker running this generation stopped during it %s times in a row (it crashed or was killed), so it was not run again: '
            'the request may be what stops the worker. Nothing was charged.', v_gen.crash_streak + 1));
          v_failed := v_failed + 1;
          continue;
        end if;
      end if;
    else
      v_left := v_left + 1;
      -- A line of a batch canceled or expired meanwhile never starts (docs/api.md, "Batches").
      if v_b.status <> 'in_progress' or v_b.expired then
        perform kiln_private.end_generation(v_gen.id, case when v_b.status <> 'in_progress' then 'canceled'
          else 'expired: the batch expired before this line started; nothing was charged' end);
        if v_b.status <> 'in_progress' then v_canceled := v_canceled + 1; else v_failed := v_failed + 1; end if;
        continue;
      end if;
      -- One of the account's parallel slots, or a wait for one. Serialised per account.
      if not v_locked then
        perform pg_advisory_xact_lock(hashtextextended('kiln.slots:' || v_b.account_id::text, 0));
        select * into v_account from kiln_private.accounts where id = v_b.account_id;
        select coalesce(v_account.parallel_slots, t.parallel_slots) - kiln_private.busy_slots(v_b.account_id) into v_free
          from kiln_private.tiers t where t.tier = v_account.tier;
        v_locked := true;
      end if;
      if v_account.tier = 'blocked' then
        perform kiln.fail_generation(v_gen.id, 'this account cannot run generations');
        v_failed := v_failed + 1;
        continue;
      end if;
      if coalesce(v_free, 0) <= 0 then
        -- Never rejected: it waits pending with a job of its own (kiln.start_generation's wait).
        v_left := v_left - 1;
        update kiln_private.generations set waiting = true, updated_at = now() where id = v_gen.id;
        perform graphile_worker.add_job('generation__run', json_build_object('id', v_gen.id),
          run_at => now() + make_interval(secs => p_wait_ms / 1000.0), job_key => v_gen.id::text, priority => 10,
          max_attempts => kiln_private.generation_job_attempts());
        continue;
      end if;
      v_free := v_free - 1;
      v_started := true;
    end if;
    v_ids := v_ids || v_gen.id;
    v_crash := v_crash || v_crashed;
  end loop;

  if cardinality(v_ids) > 0 then
    -- Their worst cases (priced when the batch was created, from the entries they run with) are
    -- reserved, once, in one call (on each line's end user's cap too when it has one), the charges
    -- naming their batch and carrying the lines' metadata; a budget that cannot cover a line fails
    -- it below, uncharged, the lines before it in batch order reserved first.
    with todo as (
      select g.*, row_number() over (order by g.batch_line) as i
        from kiln_private.generations g
        where g.id = any (v_ids) and g.charge_id is null),
    r as (
      select * from kiln_private.reserve_budgets(
        array(select t.account_id from todo t order by t.i), array(select t.workspace_id from todo t order by t.i),
        array(select t.key_id from todo t order by t.i), array(select t.model_id from todo t order by t.i),
        array(select t.origin from todo t order by t.i), array(select t.reserved_micros from todo t order by t.i),
        array(select t.id from todo t order by t.i), null, null, array(select t.end_user from todo t order by t.i),
        array(select t.batch_id from todo t order by t.i), array(select t.metadata from todo t order by t.i)))
    select coalesce(array_agg(t.id order by t.i) filter (where r.charge_id is not null), '{}'),
           coalesce(array_agg(r.charge_id order by t.i) filter (where r.charge_id is not null), '{}'),
           coalesce(array_agg(t.id order by t.i) filter (where r.charge_id is null), '{}'),
           coalesce(array_agg(r.error_code order by t.i) filter (where r.charge_id is null), '{}'),
           coalesce(array_agg(r.error_message order by t.i) filter (where r.charge_id is null), '{}')
      into v_gids, v_cids, v_rids, v_rcodes, v_rmsgs
      from r join todo t on t.i = r.ord;
    -- The lines start, with their charges, in one statement (a refused line too: it fails below,
    -- as kiln.fail_generation ends a started line).
    update kiln_private.generations g
      set status = 'processing', waiting = false,
          attempts = g.attempts + case when c.crashed then 0 else 1 end,
          crashes = g.crashes + c.crashed::int, crash_streak = g.crash_streak + c.crashed::int,
          worker_id = p_worker_id, job_id = p_job_id, charge_id = coalesce(g.charge_id, r.charge_id),
          started_at = coalesce(g.started_at, now()), updated_at = now()
      from unnest(v_ids, v_crash) as c(id, crashed)
      left join unnest(v_gids, v_cids) as r(id, charge_id) on r.id = c.id
      where g.id = c.id;
    for v_i in 1 .. cardinality(v_rids) loop
      if v_rcodes[v_i] not in ('KQ001', 'KP001') then
        raise exception '%', v_rmsgs[v_i] using errcode = v_rcodes[v_i];
      end if;
      perform kiln.fail_generation(v_rids[v_i], case when v_rcodes[v_i] = 'KQ001' then 'insufficient_quota: ' else 'payment_required: ' end
                                                || v_rmsgs[v_i]);
      v_failed := v_failed + 1;
    end loop;
    select json_agg(json_build_object(
             'id', g.id, 'attempt', g.attempts, 'max_attempts', g.max_attempts, 'account_id', g.account_id,
             'request', kiln_private.batch_line_request(g.request, v_b.models),
             'reserved_micros', g.reserved_micros) order by g.batch_line)
      into v_out
      from kiln_private.generations g
      where g.id = any (v_ids) and g.status = 'processing';
  end if;
  perform kiln_private.count_batch_lines(p_batch_id, v_left, v_started, 0, v_failed, v_canceled, 0);
  perform set_config('kiln.batch_bulk', 'off', true);
  return json_build_object('lines', coalesce(v_out, '[]'::json));
end;
$function$;
comment on function kiln.start_batch_lines(uuid,integer,integer,text,bigint,integer,integer,integer,boolean) is 'A batch__run job''s start of its group of lines (batch_line p_from to p_to) in one call: each pending line takes one of the account''s parallel slots (or waits for one with a generation__run job of its own), and the lines started reserve their worst cases, once, in one kiln_private.reserve_budgets call, on their end users'' caps too when they have one (a budget that cannot cover a line fails it insufficient_quota or payment_required, uncharged); a line whose worker died is taken over (a crash, not an attempt; p_max_crashes in a row fail it), and with p_takeover (a job''s first call) so are the lines this job had started beyond its group; lines ended, run by a live worker or by a job of their own are left. Lines of a canceled or expired batch end. Returns the lines to run (id, attempt, max_attempts, account_id, request with its catalog entries, reserved_micros); counts the group once.';
-- end of db/functions/kiln.start_batch_lines.sql
-- included from db/functions/kiln.complete_batch_lines.sql
-- functions/kiln.complete_batch_lines.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.complete_batch_lines.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.complete_batch_lines(p_batch_id uuid, p_ids uuid[], p_results jsonb, p_costs bigint[], p_provider_request_ids text[], p_model_ids text[], p_worker_id text DEFAULT NULL::text, p_job_id bigint DEFAULT NULL::bigint, p_stale_seconds integer DEFAULT NULL::integer, p_wait_ms integer DEFAULT NULL::integer, p_max_crashes integer DEFAULT 10)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gids uuid[] := '{}';
  v_cids uuid[];
  v_amounts bigint[];
  v_models text[];
  v_done uuid[];
  v_lids uuid[];
  v_costs bigint[];
  v_account uuid;
  v_applied json;
  v_completed int := 0;
  v_spent bigint := 0;
  v_take record;
  v_lines json := '[]';
begin
  if jsonb_array_length(p_results) <> coalesce(cardinality(p_ids), 0) or coalesce(cardinality(p_costs), 0) <> coalesce(cardinality(p_ids), 0) then
    raise exception 'one result and cost per line' using errcode = '22023';
  end if;
  -- Counted below at once, not line by line by the trigger.
  perform set_config('kiln.batch_bulk', 'on', true);
  -- 1. The lines, locked in batch order (as kiln.start_batch_lines locks them); those to complete
  --    are this batch's, not ended, with a reservation (as kiln.complete_generation: idempotent,
  --    a duplicated or retried completion finds the first in place).
  select coalesce(array_agg(x.id order by x.batch_line), '{}') into v_gids
    from (select g.id, g.batch_line, g.status, g.charge_id from kiln_private.generations g
            where g.id = any (p_ids) and g.batch_id = p_batch_id
            order by g.batch_line
            for update) x
    where x.status not in ('completed', 'failed') and x.charge_id is not null;
  if cardinality(v_gids) > 0 then
    -- 2. Their charges, locked: each line costs the actual cost clamped to its reservation (as
    --    kiln.settle_charge), or what its charge settled at when it is not reserved any more.
    select array_agg(c.gid order by c.id), array_agg(c.cost order by c.id),
           array_agg(c.id order by c.id) filter (where c.status = 'reserved'),
           array_agg(c.cost order by c.id) filter (where c.status = 'reserved'),
           array_agg(c.model order by c.id) filter (where c.status = 'reserved')
      into v_lids, v_costs, v_cids, v_amounts, v_models
      from (select ch.id, ch.status, p.id as gid, p.model,
                   case when ch.status = 'reserved' then least(greatest(coalesce(p.cost, 0), 0), ch.reserved_micros)
                        else coalesce(ch.settled_micros, 0) end as cost
              from (select distinct on (u.id) u.id, u.cost, u.model
                      from unnest(p_ids, p_costs, p_model_ids) with ordinality as u(id, cost, model, i)
                      where u.id = any (v_gids)
                      order by u.id, u.i) p
              join kiln_private.generations g on g.id = p.id
              join kiln_private.charges ch on ch.id = g.charge_id
              order by ch.id
              for update of ch) c;
    -- 3. The lines complete with their results and costs (rows of this job's own: done before the
    --    locks other jobs of the account wait for).
    with done as (
      update kiln_private.generations g
        set status = 'completed',
            result = p_results -> (p.i::int - 1),
            cost_micros = l.cost,
            provider_request_id = left(p.prid, 200),
            waiting = false,
            finished_at = now(),
            updated_at = now()
        from (select distinct on (u.id) u.id, u.prid, u.i
                from unnest(p_ids, p_provider_request_ids) with ordinality as u(id, prid, i)
                where u.id = any (v_gids)
                order by u.id, u.i) p,
             unnest(v_lids, v_costs) as l(id, cost)
        where g.id = p.id and l.id = p.id
        returning g.id, g.cost_micros, g.account_id)
    select array_agg(d.id), count(*)::int, coalesce(sum(d.cost_micros), 0)::bigint, min(d.account_id::text)::uuid
      into v_done, v_completed, v_spent, v_account
      from done d;
  end if;
  if p_worker_id is not null then
    -- The job goes on, so this call starts lines too: the account's slot lock is taken before the
    -- pool's row that the settlement below locks, as a start takes it before its reservation
    -- (kiln.start_batch_lines): no lock cycle with another job's start.
    perform pg_advisory_xact_lock(hashtextextended('kiln.slots:' || b.account_id::text, 0))
      from kiln_private.batches b where b.id = p_batch_id;
  end if;
  if v_completed > 0 then
    if v_cids is not null then
      -- 4. The held amounts become settled: one update per pool, key and end user's cap (in that
      --    order, as reservations take them), then the charges in one statement; a fallback that
      --    produced the output is the model the ledger names.
      update kiln_private.budget_periods b
        set held_micros = b.held_micros - s.reserved, settled_micros = b.settled_micros + s.amount
        from (select ch.pool_id, ch.period_start, sum(ch.reserved_micros)::bigint as reserved, sum(a.amount)::bigint as amount
                from unnest(v_cids, v_amounts) as a(id, amount) join kiln_private.charges ch on ch.id = a.id
                group by 1, 2) s
        where b.pool_id = s.pool_id and b.period_start = s.period_start;
      update kiln_private.key_budget_periods b
        set held_micros = b.held_micros - s.reserved, settled_micros = b.settled_micros + s.amount
        from (select ch.key_id, ch.period_start, sum(ch.reserved_micros)::bigint as reserved, sum(a.amount)::bigint as amount
                from unnest(v_cids, v_amounts) as a(id, amount) join kiln_private.charges ch on ch.id = a.id
                where ch.key_pool
                group by 1, 2) s
        where b.key_id = s.key_id and b.period_start = s.period_start;
      perform 1 from kiln_private.end_user_budget_periods b
        where (b.pool_id, b.end_user, b.period_start) in (
          select ch.pool_id, ch.end_user, ch.end_user_period from kiln_private.charges ch
            where ch.id = any (v_cids) and ch.end_user_period is not null)
        order by b.pool_id, b.end_user, b.period_start
        for update;
      update kiln_private.end_user_budget_periods b
        set held_micros = b.held_micros - s.reserved, settled_micros = b.settled_micros + s.amount
        from (select ch.pool_id, ch.end_user, ch.end_user_period, sum(ch.reserved_micros)::bigint as reserved, sum(a.amount)::bigint as amount
                from unnest(v_cids, v_amounts) as a(id, amount) join kiln_private.charges ch on ch.id = a.id
                where ch.end_user_period is not null
                group by 1, 2, 3) s
        where b.pool_id = s.pool_id and b.end_user = s.end_user and b.period_start = s.end_user_period;
      update kiln_private.charges ch
        set status = 'settled', settled_micros = a.amount, finished_at = now(), model_id = coalesce(a.model, ch.model_id)
        from unnest(v_cids, v_amounts, v_models) as a(id, amount, model)
        where ch.id = a.id;
    end if;
    -- Their slots are free: the account's oldest generation waiting for one runs now.
    perform kiln_private.nudge_waiting_generation(v_account);
  end if;
  select coalesce(json_agg(u.id = any (coalesce(v_done, '{}')) and u.first order by u.i), '[]'::json) into v_applied
    from (select x.id, x.i, row_number() over (partition by x.id order by x.i) = 1 as first
            from unnest(p_ids) with ordinality as x(id, i)) u;

  if p_worker_id is null then
    perform kiln_private.count_batch_lines(p_batch_id, 0, false, v_completed, 0, 0, v_spent);
  else
    -- The job goes on: counted as kiln_private.count_batch_lines counts, then the next lines are
    -- dispatched, and the first group of this batch whose turn it is (kiln_private.dispatch_batch_lines)
    -- is started for this job here instead of queued.
    update kiln_private.batches b
      set completed = b.completed + v_completed, spent_micros = b.spent_micros + v_spent, updated_at = now()
      where b.id = p_batch_id;
    if v_completed > 0 then
      perform kiln_private.finish_batch(p_batch_id);
    end if;
    select * into v_take from kiln_private.dispatch_batch_lines(greatest(v_completed, 10), p_batch_id);
    if v_take.take_from is not null then
      v_lines := kiln.start_batch_lines(p_batch_id, v_take.take_from, v_take.take_to, p_worker_id, p_job_id,
                                        p_stale_seconds, p_wait_ms, p_max_crashes, false) -> 'lines';
    end if;
  end if;
  perform set_config('kiln.batch_bulk', 'off', true);
  return json_build_object('applied', v_applied, 'lines', v_lines);
end;
$function$;
comment on function kiln.complete_batch_lines(uuid,uuid[],jsonb,bigint[],text[],text[],text,bigint,integer,integer,integer) is 'A batch__run job''s completion of the code lines of its group that ran to an end, in one call and set-based: the lines'' results, their charges settled at the actual cost (clamped to the reservation) with one update per pool, key and end user''s cap, then the batch counted once (may end it) and its account''s oldest slot-waiting generation nudged. Idempotent as kiln.complete_generation: a line already ended, or named twice, is not applied again, and a charge is settled once. With p_worker_id (the job goes on), the next lines are dispatched and the first group of this batch whose turn it is is started for job p_job_id (kiln.start_batch_lines) and returned as lines; without it, the next lines are queued (kiln_private.count_batch_lines). p_results is a JSON array, one result per id. Returns applied, per line, and lines.';
-- end of db/functions/kiln.complete_batch_lines.sql
-- included from db/functions/kiln_private.tg_generations__batch.sql
-- functions/kiln_private.tg_generations__batch.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_generations__batch.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_generations__batch()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- A bulk end (a cancel, an expiry) counts its lines itself.
  if current_setting('kiln.batch_bulk', true) = 'on' then
    return null;
  end if;
  if old.status = 'pending' and new.status = 'processing' then
    update kiln_private.batches
      set in_queue = greatest(in_queue - 1, 0), started_at = coalesce(started_at, now()), updated_at = now()
      where id = new.batch_id;
  elsif new.status in ('completed', 'failed') then
    update kiln_private.batches b
      set completed = b.completed + (new.status = 'completed')::int,
          canceled = b.canceled + (new.status = 'failed' and new.error = 'canceled')::int,
          failed = b.failed + (new.status = 'failed' and new.error is distinct from 'canceled')::int,
          in_queue = greatest(b.in_queue - (old.status = 'pending' and new.batch_line <= b.next_line)::int, 0),
          spent_micros = b.spent_micros + case when new.status = 'completed' then coalesce(new.cost_micros, 0) else 0 end,
          updated_at = now()
      where b.id = new.batch_id;
    perform kiln_private.finish_batch(new.batch_id);
    -- Its slot is free: the next lines (of whichever scope's turn it is) are queued, a group at a time.
    perform kiln_private.dispatch_batches(10);
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_generations__batch() is 'Trigger: a batch line that starts leaves the batch''s queue; one that ends is counted (completed, failed, canceled; its cost in spent_micros), may end the batch (kiln_private.finish_batch), and lets the next line be queued (kiln_private.dispatch_batches). Skipped while kiln.batch_bulk is on (a cancel or an expiry counts its lines itself).';
-- end of db/functions/kiln_private.tg_generations__batch.sql
-- included from db/functions/kiln.sweep_workers.sql
-- functions/kiln.sweep_workers.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.sweep_workers.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

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
        -- The job it runs under (for a batch line, its group's job, which runs it again after a
        -- crash).
        and not exists (
          select 1 from graphile_worker.jobs j
            where j.id = g.job_id and (j.locked_by is not null or (g.batch_id is not null and j.attempts < j.max_attempts)))
        -- A batch line that has not started holds no reservation: its batch's job (a group of
        -- lines), its expiry or a cancel ends it (docs/api.md, "Batches").
        and not (g.batch_id is not null and g.status = 'pending' and g.charge_id is null)
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
-- end of db/functions/kiln.sweep_workers.sql

--! split: 5-batch-perf2.sql
-- Batch lines keep flowing: a batch__run job that completes a group starts the next group of its
-- batch whose turn it is in the same call (kiln.complete_batch_lines, kiln_private.dispatch_batch_lines),
-- and a group reserves (kiln_private.reserve_budgets) and settles set-based (docs/api.md, "Batches").
drop function if exists kiln.start_batch_lines(uuid, integer, integer, text, bigint, integer, integer, integer);
drop function if exists kiln.complete_batch_lines(uuid, uuid[], jsonb, bigint[], text[], text[]);
-- included from db/functions/kiln_private.dispatch_batch_lines.sql
-- functions/kiln_private.dispatch_batch_lines.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.dispatch_batch_lines.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.dispatch_batch_lines(p_limit integer, p_take uuid, OUT n integer, OUT take_from integer, OUT take_to integer)
 RETURNS record
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_b kiln_private.batches;
  v_full uuid[] := '{}';
  v_free int;
  v_slots int;
  v_size int;
  v_k int;
  v_pending int;
  v_queued int;
begin
  n := 0;
  -- Round-robin by billing scope: each pass queues one group of lines (one batch__run job) of the
  -- scope whose turn is oldest, among batches with lines left, not expired, whose account has a
  -- slot free. A group is up to half the account's parallel slots (at most 10), so that two run
  -- at once; a smaller one is queued only when nothing of the account is queued or running (its
  -- end queues the next). A job's priority is 10 + the lines its scope already has queued, so the
  -- queue interleaves scopes (interactive generations run at priority 0: always first).
  while n < p_limit loop
    select b.* into v_b
      from kiln_private.batches b
      left join kiln_private.batch_turns t on t.scope_id = b.scope_id
      where b.status = 'in_progress' and not b.expired and b.next_line < b.total and b.expires_at > now()
        and not (b.account_id = any (v_full))
      order by t.turn nulls first, b.created_at, b.id
      limit 1
      for update of b skip locked;
    exit when not found;
    v_free := coalesce(kiln_private.batch_capacity(v_b.account_id), 0);
    select coalesce(a.parallel_slots, t.parallel_slots) into v_slots
      from kiln_private.accounts a join kiln_private.tiers t on t.tier = a.tier where a.id = v_b.account_id;
    v_size := least(greatest(coalesce(v_slots, 1) / 2, 1), 10, v_b.total - v_b.next_line);
    if v_free <= 0 or (v_free < v_size and (
          exists (select 1 from kiln_private.batches x where x.account_id = v_b.account_id and x.status = 'in_progress' and x.in_queue > 0)
          or exists (select 1 from kiln_private.generations g
                     where g.account_id = v_b.account_id and g.status = 'processing' and g.batch_id is not null))) then
      v_full := v_full || v_b.account_id;
      continue;
    end if;
    v_k := least(v_size, v_free, p_limit - n);
    select count(*)::int into v_pending from kiln_private.generations g
      where g.batch_id = v_b.id and g.batch_line between v_b.next_line + 1 and v_b.next_line + v_k and g.status = 'pending';
    select coalesce(sum(b.in_queue), 0)::int into v_queued from kiln_private.batches b
      where b.scope_id = v_b.scope_id and b.status = 'in_progress';
    update kiln_private.batches
      set next_line = next_line + v_k,
          in_queue = in_queue + v_pending,
          updated_at = now()
      where id = v_b.id;
    if v_pending > 0 then
      -- The group goes to the batch__run job asking (p_take: its batch) instead of the queue, once,
      -- while no other scope's group waits in the queue for a worker slot (that job ends instead,
      -- and frees its slot for it) and no interactive generation of the account waits for a slot.
      if p_take = v_b.id and take_from is null
         and not exists (select 1 from kiln_private.batches x
                         where x.status = 'in_progress' and x.in_queue > 0 and x.scope_id <> v_b.scope_id)
         and not exists (select 1 from kiln_private.generations g
                         where g.account_id = v_b.account_id and g.status = 'pending' and g.waiting and g.batch_id is null) then
        take_from := v_b.next_line + 1;
        take_to := v_b.next_line + v_k;
      else
        perform graphile_worker.add_job('batch__run',
          json_build_object('batch', v_b.id, 'from', v_b.next_line + 1, 'to', v_b.next_line + v_k),
          job_key => 'batch:' || v_b.id || ':' || (v_b.next_line + 1), priority => 10 + least(v_queued, 1000),
          max_attempts => kiln_private.generation_job_attempts(), flags => array['batch']);
      end if;
    end if;
    insert into kiln_private.batch_turns (scope_id, turn) values (v_b.scope_id, nextval('kiln_private.batch_turn_seq'))
      on conflict (scope_id) do update set turn = excluded.turn;
    n := n + v_k;
  end loop;
end;
$function$;
comment on function kiln_private.dispatch_batch_lines(integer,uuid) is 'Queues up to p_limit batch lines in groups (a batch__run job per group of consecutive lines, flagged batch: workers keep slots such jobs never take), round-robin by billing scope, within each account''s free parallel slots (kiln_private.batch_capacity), at priority 10 + the lines the scope already has queued: interactive work (priority 0) always starts first. A group is up to half the account''s slots (at most 10); a smaller one only when nothing of the account is queued or running. The first group of batch p_take is handed to the caller (take_from, take_to: a batch__run job that runs it at once, kiln.complete_batch_lines) instead of queued, unless another scope''s group waits in the queue or an interactive generation of the account waits for a slot. Returns how many lines it took (n).';
-- end of db/functions/kiln_private.dispatch_batch_lines.sql

--! split: 6-batch-perf3.sql
-- A batch group's start is shorter in the account's serial section (docs/api.md, "Batches"): its
-- charges are inserted with their batch and metadata (kiln_private.reserve_budgets' optional
-- p_batch_ids and p_metadata), and its lines set `processing` and their charge in one update.
drop function if exists kiln_private.reserve_budgets(uuid[], uuid[], uuid[], text[], text[], bigint[], uuid[], uuid[], text[], text[]);
-- included from db/functions/kiln_private.reserve_budgets.sql
-- functions/kiln_private.reserve_budgets.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.reserve_budgets.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.reserve_budgets(p_account_ids uuid[], p_workspace_ids uuid[], p_key_ids uuid[], p_model_ids text[], p_origins text[], p_amounts bigint[], p_generation_ids uuid[], p_run_ids uuid[], p_node_ids text[], p_end_users text[], p_batch_ids uuid[] DEFAULT NULL::uuid[], p_metadata jsonb[] DEFAULT NULL::jsonb[])
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
  c_ebudget bigint[];
  c_eperiod timestamptz[];
  c_ename text[];
  c_id uuid[];
  v_pools uuid[];
  v_periods timestamptz[];
  v_totals bigint[];
  v_budgets bigint[];
  v_admitted uuid[];
  v_kadmitted uuid[] := '{}';
  v_eadmitted text[] := '{}';
  v_eus text[];
  v_i int;
begin
  if v_n = 0 then
    return;
  end if;
  -- 1. The reservation rules, for the whole set; each request gets its pool, budget and period,
  --    its key's own budget (null = the key has none: only the pool decides) and its end user's
  --    cap (null = none: one index probe, and only for a request that names an end user).
  select array_agg(x.err order by x.i), array_agg(x.msg order by x.i), array_agg(x.pool order by x.i),
         array_agg(x.budget order by x.i), array_agg(x.kbudget order by x.i), array_agg(x.period order by x.i),
         array_agg(x.ebudget order by x.i), array_agg(x.eperiod order by x.i), array_agg(x.ename order by x.i),
         array_agg(kiln_private.uuid_v7() order by x.i)
    into c_err, c_msg, c_pool, c_budget, c_kbudget, c_period, c_ebudget, c_eperiod, c_ename, c_id
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
             eb.budget_micros as ebudget,
             kiln_private.end_user_period(eb.period, now()) as eperiod,
             eb.period as ename,
             kiln_private.period_start(case when p_workspace_ids[s.i] is null then acc.period_anchor else ws.plan_period_anchor end, now()) as period
      from generate_subscripts(p_account_ids, 1) as s(i)
      left join kiln_private.accounts acc on acc.id = p_account_ids[s.i]
      left join kiln_private.workspaces ws on ws.id = p_workspace_ids[s.i]
      left join kiln_private.workspace_members mem
        on mem.workspace_id = p_workspace_ids[s.i] and mem.account_id = p_account_ids[s.i] and mem.left_at is null
      left join kiln_private.api_keys k on k.id = p_key_ids[s.i]
      left join kiln_private.end_user_budgets eb
        on eb.pool_id = coalesce(p_workspace_ids[s.i], p_account_ids[s.i]) and eb.end_user = p_end_users[s.i]
    ) x;

  -- 2. One check-and-debit per pool for the set's total, then one per key budget, then one per
  --    end user's cap: the same transaction, so a request holds all or (below) none. Always in
  --    that order (pools, keys, end users), each in key order: concurrent callers cannot deadlock.
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
  select array_agg(t.pool order by t.pool, t.eu), array_agg(t.eu order by t.pool, t.eu), array_agg(t.period order by t.pool, t.eu),
         array_agg(t.total order by t.pool, t.eu), array_agg(t.budget order by t.pool, t.eu)
    into v_pools, v_eus, v_periods, v_totals, v_budgets
    from (select c_pool[s.i] as pool, p_end_users[s.i] as eu, min(c_eperiod[s.i]) as period, sum(p_amounts[s.i])::bigint as total,
                 min(c_ebudget[s.i]) as budget
          from generate_subscripts(p_account_ids, 1) as s(i) where c_err[s.i] is null and c_ebudget[s.i] is not null group by 1, 2) t;
  if v_pools is not null then
    v_eadmitted := kiln_private.debit_end_user_pools(v_pools, v_eus, v_periods, v_totals, v_budgets);
  end if;

  -- 3. A request whose pool, key budget or end user's cap could not take the set's total gives
  --    back what the others debited for it, then is decided on its own, in arrival order. Row locks are already
  --    held by this transaction, so nobody sees the amounts in between.
  for v_i in
    select s.i from generate_subscripts(p_account_ids, 1) as s(i)
    where c_err[s.i] is null
      and (not (c_pool[s.i] = any (v_admitted)) or (c_kbudget[s.i] is not null and not (p_key_ids[s.i] = any (v_kadmitted)))
           or (c_ebudget[s.i] is not null and not (c_pool[s.i]::text || ':' || p_end_users[s.i] = any (v_eadmitted))))
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
    if c_ebudget[v_i] is not null and c_pool[v_i]::text || ':' || p_end_users[v_i] = any (v_eadmitted) then
      update kiln_private.end_user_budget_periods set held_micros = held_micros - p_amounts[v_i]
        where pool_id = c_pool[v_i] and end_user = p_end_users[v_i] and period_start = c_eperiod[v_i];
    end if;
  end loop;
  for v_i in
    select s.i from generate_subscripts(p_account_ids, 1) as s(i)
    where c_err[s.i] is null
      and (not (c_pool[s.i] = any (v_admitted)) or (c_kbudget[s.i] is not null and not (p_key_ids[s.i] = any (v_kadmitted)))
           or (c_ebudget[s.i] is not null and not (c_pool[s.i]::text || ':' || p_end_users[s.i] = any (v_eadmitted))))
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
    elsif c_ebudget[v_i] is not null
          and cardinality(kiln_private.debit_end_user_pools(array[c_pool[v_i]], array[p_end_users[v_i]], array[c_eperiod[v_i]],
                                                            array[p_amounts[v_i]], array[c_ebudget[v_i]])) = 0 then
      update kiln_private.budget_periods set held_micros = held_micros - p_amounts[v_i]
        where pool_id = c_pool[v_i] and period_start = c_period[v_i];
      if c_kbudget[v_i] is not null then
        update kiln_private.key_budget_periods set held_micros = held_micros - p_amounts[v_i]
          where key_id = p_key_ids[v_i] and period_start = c_period[v_i];
      end if;
      c_err[v_i] := 'KQ001';
      c_msg[v_i] := format('end user "%s"''s budget for this %s is exhausted', p_end_users[v_i], c_ename[v_i]);
    end if;
  end loop;

  -- 4. The ledger: one reserved charge per request that got its reservation, with its batch and
  --    metadata when the caller gives them (p_batch_ids, p_metadata: no update after the insert).
  insert into kiln_private.charges
    (id, account_id, workspace_id, pool_id, period_start, key_id, model_id, origin, reserved_micros,
     generation_id, workflow_run_id, node_id, key_pool, end_user, end_user_period, batch_id, metadata)
  select c_id[s.i], p_account_ids[s.i], p_workspace_ids[s.i], c_pool[s.i], c_period[s.i], p_key_ids[s.i], p_model_ids[s.i],
         p_origins[s.i], p_amounts[s.i], p_generation_ids[s.i], p_run_ids[s.i], p_node_ids[s.i], c_kbudget[s.i] is not null,
         p_end_users[s.i], c_eperiod[s.i], p_batch_ids[s.i], p_metadata[s.i]
  from generate_subscripts(p_account_ids, 1) as s(i)
  where c_err[s.i] is null;

  return query
    select s.i::int, case when c_err[s.i] is null then c_id[s.i] end, c_err[s.i], c_msg[s.i]
    from generate_subscripts(p_account_ids, 1) as s(i)
    order by s.i;
end;
$function$;
comment on function kiln_private.reserve_budgets(uuid[],uuid[],uuid[],text[],text[],bigint[],uuid[],uuid[],text[],text[],uuid[],jsonb[]) is 'Reserves the worst-case cost of each request on its personal pool or, for workspace-bound calls, its Team pool, on its key''s own budget when the key has one and on its end user''s cap (p_end_users; kiln_private.end_user_budgets) when it has one, in the same step, and writes its ledger row (with its end_user, and end_user_period when a cap held it; its batch_id and metadata from the optional p_batch_ids and p_metadata): one check-and-debit per pool, per key and per end user for the set''s total, request by request in arrival order where any cannot take it; a refusal gives back every other debit. Each row carries the charge id or the request''s own refusal: 22023 (bad amount), KN001 (no account), KQ001 (blocked tier, budget, key budget or end user''s cap exhausted), KP001 (plan not active, caller left the workspace).';
-- end of db/functions/kiln_private.reserve_budgets.sql
