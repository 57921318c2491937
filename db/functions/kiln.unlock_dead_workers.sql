-- functions/kiln.unlock_dead_workers.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.unlock_dead_workers.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.unlock_dead_workers(p_stale_seconds integer)
 RETURNS text[]
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_dead text[];
begin
  -- One sweeper at a time; the others skip this round.
  if not pg_try_advisory_xact_lock(hashtextextended('kiln.sweep_workers', 0)) then
    return null;
  end if;
  select coalesce(array_agg(h.pool_id) filter (where h.pool_id is not null), array[]::text[]) into v_dead
    from kiln_private.worker_heartbeats h
    where h.lease_key is not null and not kiln_private.lease_key_held(h.lease_key);
  if cardinality(v_dead) > 0 then
    perform graphile_worker.force_unlock_workers(v_dead);
    -- Wake idle workers now rather than at their next poll.
    perform pg_notify('jobs:insert', json_build_object('r', random(), 'count', cardinality(v_dead))::text);
  end if;
  delete from kiln_private.worker_heartbeats h
    where h.lease_key is not null and not kiln_private.lease_key_held(h.lease_key);
  return v_dead;
end;
$function$;
comment on function kiln.unlock_dead_workers(integer) is 'Crash recovery, run by every worker about once a second: unlocks (force_unlock_workers) the jobs of registered workers whose lease lock is free — their process or connection died — so they run again elsewhere within seconds, and forgets them. Reads only the workers'' rows. Returns the pools unlocked (null when another sweep was running).';
