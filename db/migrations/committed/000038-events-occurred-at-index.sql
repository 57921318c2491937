--! Previous: sha1:4e817b9364e53e69cace4c12155bf736dd6d511b
--! Hash: sha1:5f115877d32f9649570b5f652fded60c48b9643b
--! Message: Old events are found through a btree on occurred_at

--! split: 1-current.sql
-- kiln.purge_events found old events through the BRIN index on occurred_at, or the planner's
-- other choice, the primary key from the oldest id. Neither stays bounded:
-- - BRIN summaries only widen. Purged pages are refilled by new events, so their ranges come to
--   span the whole retention period and every sweep reads them all.
-- - With nothing old to find, the primary key scan cannot stop before its limit: it reads every
--   event, every heartbeat.
-- - With `order by id` over the BRIN bitmap, every batch read and sorted the whole backlog first.
-- A btree on occurred_at gives the sweep exactly the old events, oldest first, and stops at the
-- cutoff or the limit. Nothing else reads the BRIN index (GET /events reads events_scope_tx_idx).
-- Each event pays one more btree insert, on the index's last page (times only grow).
create index if not exists events_occurred_at_idx on kiln_private.events (occurred_at);
drop index if exists kiln_private.events_occurred_idx;

create or replace function kiln.purge_events(p_age_seconds integer, p_limit integer) returns integer
  language plpgsql volatile security definer set search_path to pg_catalog, pg_temp as $$
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
$$;
comment on function kiln.purge_events(integer, integer) is 'Deletes up to p_limit events older than p_age_seconds, with their webhook deliveries and attempts; an event with a pending delivery stays until it ends. How many events (the workers'' sweep calls it while KILN_EVENT_RETENTION is set).';
