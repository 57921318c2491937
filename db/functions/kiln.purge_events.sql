-- functions/kiln.purge_events.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.purge_events.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.purge_events(p_age_seconds integer, p_limit integer)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_ids bigint[];
  v_n int;
begin
  if p_age_seconds is null or p_age_seconds < 1 or p_limit is null or p_limit < 1 then
    raise exception 'purge_events needs a positive age and limit' using errcode = 'KI001';
  end if;
  -- Oldest first, through events_occurred_at_idx. Rows another sweep holds are skipped, so sweeps
  -- in several workers split the work instead of waiting on each other.
  select coalesce(array_agg(id), '{}') into v_ids from (
    select e.id from kiln_private.events e
    where e.occurred_at < now() - make_interval(secs => p_age_seconds)
      and not exists (select 1 from kiln_private.webhook_deliveries d where d.event_id = e.id and d.status = 'pending')
    order by e.occurred_at
    limit p_limit
    for update of e skip locked
  ) old;
  if cardinality(v_ids) = 0 then
    return 0;
  end if;
  -- A delivery made pending since (redeliver, recover) is re-checked under its row lock and kept…
  delete from kiln_private.webhook_deliveries d where d.event_id = any (v_ids) and d.status <> 'pending';
  -- …and so is its event.
  with gone as (
    delete from kiln_private.events e where e.id = any (v_ids)
      and not exists (select 1 from kiln_private.webhook_deliveries d where d.event_id = e.id)
    returning 1
  )
  select count(*)::int into v_n from gone;
  return v_n;
end;
$function$;
comment on function kiln.purge_events(integer,integer) is 'Deletes up to p_limit events older than p_age_seconds, with their webhook deliveries and attempts; an event with a pending delivery stays until it ends. How many events (the workers'' sweep calls it while KILN_EVENT_RETENTION is set).';
