--! Previous: sha1:032c8292706b7461c3d6898de8b04e475143491d
--! Hash: sha1:d81f83dbfa249d04308ee4d5d147cd31e536830f
--! Message: The webhook job's settings in one place; the disable reason names its threshold

--! split: 1-current.sql
-- The webhook__deliver job was spelled out three times (kiln_private.emit_event,
-- kiln_private.queue_delivery, kiln.record_webhook_attempt): its payload, the endpoint's queue and
-- its attempts. kiln_private.webhook_job is now the one place; the three queue what it returns.
-- The disable reason said "5 days" whatever p_disable_after_seconds was: it now says the threshold
-- it was given, in words (kiln_private.duration_text).

create or replace function kiln_private.webhook_job(p_delivery_id uuid, p_endpoint_id uuid, p_round integer, p_try integer,
                                                    p_run_at timestamptz default null)
returns graphile_worker.job_spec
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  -- A queue per endpoint runs its deliveries one at a time, so a hanging receiver holds one
  -- worker slot. The task reads d, r and n (tasks/webhook__deliver.ts).
  select row('webhook__deliver', json_build_object('d', p_delivery_id, 'r', p_round, 'n', p_try),
             'kiln-webhook:' || p_endpoint_id, p_run_at, 25, null, null, null)::graphile_worker.job_spec;
$$;
comment on function kiln_private.webhook_job(uuid, uuid, integer, integer, timestamptz) is 'The webhook__deliver job of one try of a delivery (round p_round, try p_try), on its endpoint''s queue, at p_run_at (now when null): the job''s settings in one place, for graphile_worker.add_jobs.';

create or replace function kiln_private.duration_text(p_seconds integer)
returns text
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
  select case
    when p_seconds % 86400 = 0 and p_seconds <> 0 then (p_seconds / 86400)::text || case when p_seconds = 86400 then ' day' else ' days' end
    when p_seconds % 3600 = 0 and p_seconds <> 0 then (p_seconds / 3600)::text || case when p_seconds = 3600 then ' hour' else ' hours' end
    when p_seconds % 60 = 0 and p_seconds <> 0 then (p_seconds / 60)::text || case when p_seconds = 60 then ' minute' else ' minutes' end
    else p_seconds::text || case when p_seconds = 1 then ' second' else ' seconds' end
  end;
$$;
comment on function kiln_private.duration_text(integer) is 'A number of seconds in words, in the largest whole unit (432000 → ''5 days'', 5400 → ''90 minutes''), for messages a person reads.';

create or replace function kiln_private.emit_event(p_scope_id uuid, p_type text, p_subject_id uuid, p_data json, p_endpoint_id uuid default null)
returns bigint
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_id bigint;
  v_jobs graphile_worker.job_spec[];
begin
  insert into kiln_private.events (scope_id, type, subject_id, data)
    values (p_scope_id, p_type, p_subject_id, p_data)
    returning id into v_id;
  -- One delivery and one job per matching endpoint, in this transaction: never lost.
  with d as (
    insert into kiln_private.webhook_deliveries (endpoint_id, event_id)
    select e.id, v_id from kiln_private.webhook_endpoints e
    where e.scope_id = p_scope_id and e.enabled
      and (p_endpoint_id is null or e.id = p_endpoint_id)
      and (e.events is null or p_type = any (e.events))
    returning id, endpoint_id)
  select array_agg(kiln_private.webhook_job(d.id, d.endpoint_id, 0, 0)) into v_jobs from d;
  if v_jobs is not null then
    perform graphile_worker.add_jobs(v_jobs);
  end if;
  -- GET /events streams wake up and read the table.
  perform pg_notify('kiln_status', json_build_object('k', 'events', 'id', p_scope_id)::text);
  return v_id;
end;
$$;
comment on function kiln_private.emit_event(uuid, text, uuid, json, uuid) is 'Writes one event to the outbox and, in the same transaction, a delivery plus a webhook__deliver job for each enabled endpoint of the scope whose filter matches (only p_endpoint_id when given); notifies GET /events streams. Returns the event id.';

create or replace function kiln_private.queue_delivery(p_id uuid)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v record;
begin
  update kiln_private.webhook_deliveries set status = 'pending', tries = 0, round = round + 1,
    next_attempt_at = clock_timestamp(), failed_at = null
    where id = p_id returning id, endpoint_id, round into v;
  perform graphile_worker.add_jobs(array[kiln_private.webhook_job(v.id, v.endpoint_id, v.round, 0)]);
end;
$$;
comment on function kiln_private.queue_delivery(uuid) is 'Starts a new round for a delivery (same message, same webhook-id): pending, tries 0, a job now.';

create or replace function kiln.record_webhook_attempt(p_delivery_id uuid, p_round integer, p_tries integer, p_status_code integer, p_error_class text, p_error text,
                                                      p_duration_ms integer, p_retry_after integer, p_schedule integer[], p_disable_after_seconds integer)
returns json
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_d kiln_private.webhook_deliveries;
  v_ok boolean := p_status_code between 200 and 299;
  v_delay int;
  v_gone boolean := p_status_code = 410;
  v_failing timestamptz;
begin
  select * into v_d from kiln_private.webhook_deliveries where id = p_delivery_id for update;
  if not found then return json_build_object('status', 'gone'); end if;
  insert into kiln_private.webhook_attempts (delivery_id, status_code, duration_ms, error_class)
    values (p_delivery_id, p_status_code, p_duration_ms, case when v_ok then null else p_error_class end);
  -- A redeliver or recover started a new round while this attempt was in flight: the attempt is
  -- logged, and the new round's own job decides the delivery.
  if v_d.round <> p_round or v_d.tries <> p_tries or v_d.status <> 'pending' then
    update kiln_private.webhook_deliveries set attempts = attempts + 1 where id = p_delivery_id;
    return json_build_object('status', 'stale');
  end if;
  if v_ok then
    update kiln_private.webhook_deliveries set status = 'delivered', attempts = attempts + 1, tries = tries + 1,
      delivered_at = clock_timestamp(), next_attempt_at = null, last_status_code = p_status_code, last_error = null
      where id = p_delivery_id;
    update kiln_private.webhook_endpoints set failing_since = null, last_success_at = now() where id = v_d.endpoint_id;
    return json_build_object('status', 'delivered');
  end if;
  update kiln_private.webhook_endpoints set failing_since = coalesce(failing_since, now())
    where id = v_d.endpoint_id returning failing_since into v_failing;
  if v_gone or v_failing < now() - make_interval(secs => p_disable_after_seconds) then
    update kiln_private.webhook_endpoints set enabled = false, updated_at = now(),
      disabled_reason = case when v_gone then 'The endpoint answered 410 Gone.'
                             else 'No successful delivery for ' || kiln_private.duration_text(p_disable_after_seconds) || ' while failing.' end
      where id = v_d.endpoint_id;
    update kiln_private.webhook_deliveries set status = 'failed', attempts = attempts + 1, tries = tries + 1,
      failed_at = clock_timestamp(), next_attempt_at = null, last_status_code = p_status_code, last_error = p_error
      where id = p_delivery_id;
    return json_build_object('status', 'failed', 'disabled', true);
  end if;
  if v_d.tries + 1 > coalesce(array_length(p_schedule, 1), 0) then
    update kiln_private.webhook_deliveries set status = 'failed', attempts = attempts + 1, tries = tries + 1,
      failed_at = clock_timestamp(), next_attempt_at = null, last_status_code = p_status_code, last_error = p_error
      where id = p_delivery_id;
    return json_build_object('status', 'failed');
  end if;
  -- Retry-After (429/503) is honoured, but never beyond the schedule's longest step.
  v_delay := greatest(p_schedule[v_d.tries + 1], least(coalesce(p_retry_after, 0), (select max(s) from unnest(p_schedule) s)));
  update kiln_private.webhook_deliveries set attempts = attempts + 1, tries = tries + 1,
    next_attempt_at = clock_timestamp() + make_interval(secs => v_delay), last_status_code = p_status_code, last_error = p_error
    where id = p_delivery_id;
  perform graphile_worker.add_jobs(array[kiln_private.webhook_job(v_d.id, v_d.endpoint_id, v_d.round, v_d.tries + 1,
                                                                  clock_timestamp() + make_interval(secs => v_delay))]);
  return json_build_object('status', 'pending', 'delaySeconds', v_delay);
end;
$$;
comment on function kiln.record_webhook_attempt(uuid, integer, integer, integer, text, text, integer, integer, integer[], integer) is 'Logs an attempt of round p_round, try p_tries and moves the delivery on (an attempt of an earlier round or try is only logged): 2xx delivered; 410 (or failing past p_disable_after_seconds, a reason naming that threshold) disables the endpoint; otherwise the next attempt per p_schedule (seconds; Retry-After honoured within it), or failed when the schedule is used up.';
