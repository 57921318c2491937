--! Previous: sha1:92001a398c54082a2edc8e373327c0ec9c87519a
--! Hash: sha1:65fcf643ffc25ef43a296adf214d8e38bd70548c
--! Message: Time-ordered generation ids

--! split: 1-current.sql
-- Generation ids are time-ordered (UUID version 7, kiln_private.uuid_v7()), as ledger ids became
-- in 000033: a POST's entries in generations_pkey and charges_generation_idx land on the right edge
-- of those indexes instead of a random page. Measured on a 10-million-charge, 1-million-generation
-- ledger (6,000 sequential creates, 128 MB of shared buffers): of about 12,000 page reads from
-- disk, 4,088 were generations_pkey leaves and 3,758 charges_generation_idx leaves — the pages
-- random ids scatter over. Ids stay RFC 9562 UUIDs (74 random bits; an id was never a secret:
-- every read is authorized and another account's id answers 404), and existing ids keep their
-- values. Run ids and every other id are unchanged.
--
-- The three functions that choose a generation's id are redefined with that one change
-- (kiln_private.insert_generations for POST /generations and MCP, kiln.start_workflow_run and
-- kiln.retry_workflow_run for workflow outputs).

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
  perform 1 from kiln_private.workflows where id = p_workflow_id and account_id = p_account_id;
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
