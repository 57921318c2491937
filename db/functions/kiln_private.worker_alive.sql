-- functions/kiln_private.worker_alive.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.worker_alive.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.worker_alive(p_worker_id text, p_stale_seconds integer)
 RETURNS boolean
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select coalesce((
    select case when h.lease_key is not null then kiln_private.lease_key_held(h.lease_key)
                else h.last_seen >= now() - make_interval(secs => p_stale_seconds) end
    from kiln_private.worker_heartbeats h
    where h.worker_id = p_worker_id or h.pool_id = p_worker_id
    limit 1), false);
$function$;
comment on function kiln_private.worker_alive(text,integer) is 'Whether a worker (its lease id, or its graphile-worker pool id) is alive: its session still holds its lease lock (workers without a lease: a heartbeat within the stale window). Unknown workers are not alive.';
