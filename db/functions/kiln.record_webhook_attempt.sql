-- functions/kiln.record_webhook_attempt.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.record_webhook_attempt.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.record_webhook_attempt(p_delivery_id uuid, p_round integer, p_tries integer, p_status_code integer, p_error_class text, p_error text, p_duration_ms integer, p_retry_after integer, p_schedule integer[], p_disable_after_seconds integer)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;
comment on function kiln.record_webhook_attempt(uuid,integer,integer,integer,text,text,integer,integer,integer[],integer) is 'Logs an attempt of round p_round, try p_tries and moves the delivery on (an attempt of an earlier round or try is only logged): 2xx delivered; 410 (or failing past p_disable_after_seconds, a reason naming that threshold) disables the endpoint; otherwise the next attempt per p_schedule (seconds; Retry-After honoured within it), or failed when the schedule is used up.';
