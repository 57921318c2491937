-- functions/kiln.beat_worker.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.beat_worker.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.beat_worker(p_worker_id text)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.worker_heartbeats;
begin
  update kiln_private.worker_heartbeats set last_seen = now() where worker_id = p_worker_id
    returning * into v_row;
  if not found then
    return false;
  end if;
  -- No job lock is refreshed here any more (graphile-worker has no public call for it): a
  -- generation's deadline is capped below graphile-worker's 4-hour lock expiry instead
  -- (KILN_GENERATION_TIMEOUT_MS, src/config.ts), so no job stays locked that long.
  -- Called on the lease connection: false when this session no longer holds the lease (the
  -- connection was replaced), so the worker stops running jobs under it.
  return exists (
    select 1 from pg_locks l
    where l.locktype = 'advisory' and l.granted and l.pid = pg_backend_pid()
      and l.database = (select oid from pg_database where datname = current_database())
      and l.classid = 1263094862::oid and l.objid = v_row.lease_key::oid and l.objsubid = 2);
end;
$function$;
comment on function kiln.beat_worker(text) is 'A registered worker''s heartbeat, on its lease connection: records it and returns whether this session still holds the lease.';
