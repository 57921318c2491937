--! Previous: sha1:143885089a6530f5e0f950f6adf4111f75436e82
--! Hash: sha1:9a3bbc788f6de7b546e1ba6b0527c27469bc4a42
--! Message: Fallback chains name the producing model; upstream health shared by every worker

--! split: 1-fallbacks-and-health.sql
-- Fallback chains name the model that produced an output; upstream health shared by every worker.

-- ---------------------------------------------------------------- completion names the producing model

drop function if exists kiln.complete_generation(uuid, jsonb, bigint, text);
drop function if exists kiln.complete_generation(uuid, jsonb, bigint, text, text);
create function kiln.complete_generation(p_id uuid, p_result jsonb, p_cost_micros bigint, p_provider_request_id text, p_model_id text default null)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $$
declare
  v_gen kiln_private.generations;
  v_run kiln_private.workflow_runs;
  v_out kiln_private.workflow_run_outputs;
  v_charge kiln_private.charges;
  v_run_id uuid;
  v_ready uuid[];
begin
  select run_id into v_run_id from kiln_private.generations where id = p_id;
  if not found then
    raise exception 'generation not found' using errcode = 'KN001';
  end if;
  if v_run_id is not null then
    select * into v_run from kiln_private.workflow_runs where id = v_run_id for update;
  end if;
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if v_gen.status in ('completed', 'failed') or v_gen.charge_id is null then
    -- Idempotent: a duplicated or retried job finds the first result in place.
    return json_build_object('applied', false, 'status', v_gen.status, 'cost_micros', v_gen.cost_micros);
  end if;
  v_charge := kiln.settle_charge(v_gen.charge_id, p_cost_micros);
  if p_model_id is not null and p_model_id is distinct from v_charge.model_id then
    -- A fallback produced the output: the ledger names (and bills) the model that made it.
    update kiln_private.charges set model_id = p_model_id where id = v_charge.id returning * into v_charge;
  end if;
  update kiln_private.generations
    set status = 'completed',
        result = p_result,
        cost_micros = coalesce(v_charge.settled_micros, 0),
        provider_request_id = left(p_provider_request_id, 200),
        waiting = false,
        finished_at = now(),
        updated_at = now()
    where id = p_id;

  if v_run_id is not null then
    -- The run records the output; its dependents lose one pending dependency and those reaching
    -- zero are queued, all in this transaction.
    update kiln_private.workflow_run_outputs
      set status = 'completed', result = p_result || jsonb_build_object('type', type),
          cost_micros = coalesce(v_charge.settled_micros, 0), finished_at = clock_timestamp(), updated_at = now()
      where run_id = v_run_id and output_node_id = v_gen.output_node_id
      returning * into v_out;
    if v_run.status in ('pending', 'running') and cardinality(v_out.dependents) > 0 then
      with dec as (
        update kiln_private.workflow_run_outputs
          set pending_deps = pending_deps - 1,
              status = case when pending_deps = 1 then 'queued' else status end,
              updated_at = now()
          where run_id = v_run_id and output_node_id = any (v_out.dependents) and status = 'waiting'
          returning generation_id, status, ordinal
      )
      select array_agg(generation_id order by ordinal) filter (where status = 'queued') into v_ready from dec;
      perform kiln_private.enqueue_generations(v_ready, v_run.max_attempts);
    end if;
    perform kiln_private.note_workflow_progress(v_run_id, 1);
  end if;
  perform kiln_private.nudge_waiting_generation(v_gen.account_id);
  return json_build_object('applied', true, 'status', 'completed', 'cost_micros', v_charge.settled_micros,
                           'queued', coalesce(cardinality(v_ready), 0));
end;
$$;
comment on function kiln.complete_generation(uuid,jsonb,bigint,text,text) is 'Stores the result and settles the charge at the actual cost (clamped to the reservation) in one call; the charge names p_model_id, the catalog entry that produced the output (a fallback of the requested one, or itself). For a run output also records it on the run, decrements its dependents and queues those ready. Idempotent: only the first completion of a generation applies.';

-- ---------------------------------------------------------------- upstream health

create table if not exists kiln_private.upstream_health (
  model_id text primary key references kiln_private.models (id) on delete cascade on update cascade,
  consecutive_failures int not null default 0 check (consecutive_failures >= 0),
  skipped_until timestamptz,
  trial_until timestamptz,
  last_error text,
  last_error_at timestamptz,
  last_success_at timestamptz,
  updated_at timestamptz not null default now()
);
comment on table kiln_private.upstream_health is
  'Circuit breaker per catalog entry, shared by every worker: after enough consecutive failed calls the entry is skipped (its fallback taken at once) until skipped_until; then one trial call (trial_until is its lease) decides.';

create table if not exists kiln_private.upstream_minutes (
  model_id text not null references kiln_private.models (id) on delete cascade on update cascade,
  minute timestamptz not null,
  successes int not null default 0,
  failures int not null default 0,
  primary key (model_id, minute)
);
comment on table kiln_private.upstream_minutes is 'Upstream calls per catalog entry and minute (the last hour is kept): the recent error rate of kiln.provider_health.';

create or replace function kiln.claim_upstream(p_model_id text, p_trial_seconds int)
  returns text
  language plpgsql security definer set search_path to 'pg_catalog', 'pg_temp'
as $$
declare
  v_h kiln_private.upstream_health;
begin
  select * into v_h from kiln_private.upstream_health where model_id = p_model_id;
  if not found or v_h.skipped_until is null then
    return 'use';
  end if;
  if v_h.skipped_until > now() then
    return 'skip';
  end if;
  -- The skip window is over: exactly one caller gets the trial call; the others keep skipping
  -- until it reports (or its lease runs out, when its worker died).
  update kiln_private.upstream_health
    set trial_until = now() + make_interval(secs => greatest(p_trial_seconds, 1)), updated_at = now()
    where model_id = p_model_id and skipped_until <= now() and (trial_until is null or trial_until <= now());
  return case when found then 'trial' else 'skip' end;
end;
$$;
comment on function kiln.claim_upstream(text,integer) is 'Whether a worker may call a catalog entry''s upstream now: use (healthy), skip (skipped after repeated failures, or another worker''s trial call is in flight) or trial (this caller makes the one call that decides; its lease lasts p_trial_seconds).';

create or replace function kiln.record_upstream(p_model_id text, p_ok boolean, p_error text, p_threshold int, p_skip_seconds int)
  returns text
  language plpgsql security definer set search_path to 'pg_catalog', 'pg_temp'
as $$
declare
  v_minute timestamptz := date_trunc('minute', now());
  v_h kiln_private.upstream_health;
begin
  insert into kiln_private.upstream_minutes as m (model_id, minute, successes, failures)
    values (p_model_id, v_minute, p_ok::int, (not p_ok)::int)
    on conflict (model_id, minute) do update
      set successes = m.successes + excluded.successes, failures = m.failures + excluded.failures;
  if p_ok then
    -- Written at most once a second per entry while it stays healthy.
    insert into kiln_private.upstream_health as h (model_id, last_success_at) values (p_model_id, now())
      on conflict (model_id) do update
        set consecutive_failures = 0, skipped_until = null, trial_until = null, last_success_at = now(), updated_at = now()
        where h.consecutive_failures > 0 or h.skipped_until is not null or h.last_success_at is null
           or h.last_success_at < now() - interval '1 second';
    return 'healthy';
  end if;
  insert into kiln_private.upstream_health as h (model_id, consecutive_failures, last_error, last_error_at)
    values (p_model_id, 1, left(p_error, 300), now())
    on conflict (model_id) do update
      set consecutive_failures = h.consecutive_failures + 1, last_error = excluded.last_error,
          last_error_at = excluded.last_error_at, updated_at = now()
    returning * into v_h;
  if v_h.consecutive_failures >= greatest(p_threshold, 1) then
    -- Reached the threshold, or a trial call failed: skip it for another window.
    update kiln_private.upstream_health
      set skipped_until = now() + make_interval(secs => greatest(p_skip_seconds, 1)), trial_until = null
      where model_id = p_model_id;
    -- Keep an hour of per-minute counts (a cheap trim on the failure path only).
    delete from kiln_private.upstream_minutes where model_id = p_model_id and minute < now() - interval '1 hour';
    return 'skipped';
  end if;
  return 'failing';
end;
$$;
comment on function kiln.record_upstream(text,boolean,text,integer,integer) is 'Records the outcome of one upstream call (after the adapter''s own retries) for a catalog entry: a success resets it; p_threshold consecutive failures (or a failed trial) skip it for p_skip_seconds. p_error is the client-safe summary.';

create or replace function kiln_private.trim_upstream_minutes() returns void
  language sql security definer set search_path to 'pg_catalog', 'pg_temp'
as $$
  delete from kiln_private.upstream_minutes where minute < now() - interval '1 hour';
$$;
comment on function kiln_private.trim_upstream_minutes() is 'Drops per-minute upstream counts older than an hour (run by the workers'' full sweep).';

create or replace view kiln.provider_health as
  select m.id as model_id,
         m.provider,
         m.upstream ->> 'baseUrl' as base_url,
         coalesce(m.upstream ->> 'model', m.upstream ->> 'app', m.upstream ->> 'version') as upstream_model,
         case
           when h.skipped_until is null then case when coalesce(h.consecutive_failures, 0) > 0 then 'failing' else 'healthy' end
           when h.skipped_until > now() then 'skipped'
           when h.trial_until > now() then 'trial'
           else 'awaiting_trial'
         end as state,
         coalesce(h.consecutive_failures, 0) as consecutive_failures,
         h.skipped_until,
         h.last_error,
         h.last_error_at,
         h.last_success_at,
         coalesce(r.calls, 0) as calls_15m,
         coalesce(r.failures, 0) as failures_15m,
         case when coalesce(r.calls, 0) > 0 then round(r.failures::numeric / r.calls, 3) end as error_rate_15m
    from kiln_private.models m
    left join kiln_private.upstream_health h on h.model_id = m.id
    left join lateral (
      select sum(successes + failures) as calls, sum(failures) as failures
        from kiln_private.upstream_minutes um
        where um.model_id = m.id and um.minute >= date_trunc('minute', now()) - interval '14 minutes'
    ) r on true
    where m.provider <> 'local';
comment on view kiln.provider_health is 'Each network catalog entry''s upstream as the workers see it: state (healthy, failing, skipped — its fallback is taken at once —, trial — one call in flight decides —, awaiting_trial), the consecutive failures, until when it is skipped, the last error (client-safe summary) and the calls, failures and error rate of the last 15 minutes.';
