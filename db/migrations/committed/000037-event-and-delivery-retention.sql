--! Previous: sha1:5a3578e8e99f0ca758bdce61e539efbf0b152b9c
--! Hash: sha1:4e817b9364e53e69cace4c12155bf736dd6d511b
--! Message: Events and the webhook delivery log are purged after KILN_EVENT_RETENTION

--! split: 1-current.sql
-- Events and the webhook delivery log stop growing forever: the workers' sweep removes events
-- older than KILN_EVENT_RETENTION (30 days unless configured) with their deliveries and attempts.
-- An event one of whose deliveries is still pending (retrying, or sent again by redeliver or
-- recover) is kept until that delivery ends, so no message is dropped in flight.

-- Deleting an event checks its deliveries (the foreign key has no index today: a scan of the
-- delivery log per event), and the purge finds an event's deliveries by it. Ids only grow, so
-- inserts land on the index's last page.
create index if not exists webhook_deliveries_event_idx on kiln_private.webhook_deliveries (event_id);

-- The purge finds old events through the BRIN index on occurred_at. A range is only skipped once
-- summarized, and without autosummarize only a vacuum summarizes: an insert-only table is vacuumed
-- after about a fifth of it is new, so every sweep read that fifth of the table (50 ms at 300,000
-- events, against 0.04 ms summarized). With autosummarize, autovacuum summarizes each range as
-- soon as inserts move past it. The generations' BRIN index (analysts' time ranges) gets the same.
alter index kiln_private.events_occurred_idx set (autosummarize = on);
alter index kiln_private.generations_created_brin set (autosummarize = on);

drop function if exists kiln.purge_events(integer, integer);
create function kiln.purge_events(p_age_seconds integer, p_limit integer) returns integer
  language plpgsql volatile security definer set search_path to pg_catalog, pg_temp as $$
declare
  v_ids bigint[];
  v_n int;
begin
  if p_age_seconds is null or p_age_seconds < 1 or p_limit is null or p_limit < 1 then
    raise exception 'purge_events needs a positive age and limit' using errcode = 'KI001';
  end if;
  -- Oldest first; rows another sweep holds are skipped, so sweeps in several workers split the
  -- work instead of waiting on each other.
  select coalesce(array_agg(id), '{}') into v_ids from (
    select e.id from kiln_private.events e
    where e.occurred_at < now() - make_interval(secs => p_age_seconds)
      and not exists (select 1 from kiln_private.webhook_deliveries d where d.event_id = e.id and d.status = 'pending')
    order by e.id
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
