-- functions/kiln_private.unlock_silent_pools.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.unlock_silent_pools.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.unlock_silent_pools(p_stale_seconds integer)
 RETURNS text[]
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_stale interval := make_interval(secs => p_stale_seconds);
  v_dead text[];
begin
  -- Pools holding job locks older than the stale window whose worker is not alive: one that never
  -- registered, or one from before leases that stopped heartbeating. A pool locks a job queue only
  -- together with a job of that queue and lets go of both together, so its job locks (the
  -- graphile_worker.jobs view) find it; force_unlock_workers frees its queue locks as well.
  select coalesce(array_agg(distinct j.locked_by), array[]::text[]) into v_dead
    from graphile_worker.jobs j
    where j.locked_by is not null and j.locked_at < now() - v_stale
      and not kiln_private.worker_alive(j.locked_by, p_stale_seconds);
  if cardinality(v_dead) > 0 then
    perform graphile_worker.force_unlock_workers(v_dead);
    perform pg_notify('jobs:insert', json_build_object('r', random(), 'count', cardinality(v_dead))::text);
  end if;
  delete from kiln_private.worker_heartbeats h where h.lease_key is null and h.last_seen < now() - v_stale;
  return v_dead;
end;
$function$;
comment on function kiln_private.unlock_silent_pools(integer) is 'The full sweep''s part of crash recovery: unlocks (graphile_worker.force_unlock_workers) the jobs of pools that hold locks older than the stale window and are not alive (never registered, or pre-lease workers without a recent heartbeat).';
