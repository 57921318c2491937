--! Previous: sha1:220c0ae9045d50cdc2654c54ea41822835484633
--! Hash: sha1:1e78e28d974ff9bfa5e8ca3d17277fd2b90c6888
--! Message: enqueue bypass for new generations

--! split: 1-current.sql
-- POST /generations queues its jobs with one insert (the one bypass of graphile-worker's public
-- API); every other enqueue keeps using graphile_worker.add_jobs.

create or replace function kiln_private.enqueue_new_generations(p_ids uuid[], p_max_attempts int) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_task int;
begin
  if coalesce(cardinality(p_ids), 0) = 0 then
    return;
  end if;
  -- graphile_worker.add_jobs clears the key of any locked job with the same key first; its
  -- cached generic plan for that update scans the whole jobs table, so every POST got slower as
  -- the queue grew. Measured on one connection (2-core VM, 2026-11-24), Postgres CPU of
  -- kiln.start_generations: with add_jobs 1,825 µs per call of 1 and 317 µs per request in calls
  -- of 10, rising to 3,625 µs and 553 µs after 3,300 more queued jobs; with this insert 850–
  -- 1,325 µs and 220–227 µs, flat. These are brand-new generation ids, so no job can hold
  -- their key: the rows are exactly what add_jobs writes for a new key (test/db.enqueue.test.ts
  -- compares the two and fails when graphile-worker's table layout changes).
  select id into v_task from graphile_worker._private_tasks where identifier = 'generation__run';
  if not found then
    perform kiln_private.enqueue_generations(p_ids, p_max_attempts);
    return;
  end if;
  insert into graphile_worker._private_jobs (task_id, payload, max_attempts, key)
    select v_task, json_build_object('id', g), p_max_attempts, g::text from unnest(p_ids) g;
  perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":' || cardinality(p_ids)::text || '}');
end;
$$;
comment on function kiln_private.enqueue_new_generations(uuid[], int) is
  'Queues generation__run jobs for generations created in this transaction (their keys cannot exist yet): the rows graphile_worker.add_jobs would write, in one insert. Every other enqueue uses kiln_private.enqueue_generations (add_jobs).';

create or replace function kiln_private.insert_generations(
  p_account_ids uuid[],
  p_key_ids uuid[],
  p_workspace_ids uuid[],
  p_origins text[],
  p_types text[],
  p_model_ids text[],
  p_model_versions bigint[],
  p_requests jsonb[],
  p_reserves bigint[],
  p_max_attempts int
) returns table (ord int, id uuid, error_code text, error_message text)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  c_err text[];
  c_msg text[];
  c_gid uuid[];
  c_charge uuid[];
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
  select array_agg(x.err order by x.i), array_agg(x.msg order by x.i), array_agg(gen_random_uuid() order by x.i)
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

  return query
    select s.i::int, case when c_charge[s.i] is not null then c_gid[s.i] end, c_err[s.i], c_msg[s.i]
    from generate_subscripts(p_account_ids, 1) as s(i)
    order by s.i;
end;
$$;
comment on function kiln_private.insert_generations(uuid[], uuid[], uuid[], text[], text[], text[], bigint[], jsonb[], bigint[], int) is
  'The generation primitive: checks each request''s type and model (KI001) and its catalog price version (KS001), reserves the worst case (kiln_private.reserve_budgets), inserts the generations and queues their generation__run jobs, for a whole set at once. Each row carries the new id or the request''s own refusal; the others still go in.';
alter function kiln_private.insert_generations(uuid[], uuid[], uuid[], text[], text[], text[], bigint[], jsonb[], bigint[], int) set plan_cache_mode = force_generic_plan;
