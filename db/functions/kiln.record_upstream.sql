-- functions/kiln.record_upstream.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.record_upstream.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.record_upstream(p_model_id text, p_ok boolean, p_error text, p_threshold integer, p_skip_seconds integer)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;
comment on function kiln.record_upstream(text,boolean,text,integer,integer) is 'Records the outcome of one upstream call (after the adapter''s own retries) for a catalog entry: a success resets it; p_threshold consecutive failures (or a failed trial) skip it for p_skip_seconds. p_error is the client-safe summary.';
