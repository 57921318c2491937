-- functions/kiln.register_worker.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.register_worker.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.register_worker(p_hostname text, p_pid integer)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_key int;
  v_id text;
begin
  -- Session-level, deliberately: the lock outlives this call and dies with the session.
  loop
    v_key := 1 + floor(random() * 2147483646)::int;
    exit when pg_try_advisory_lock(1263094862, v_key);
  end loop;
  v_id := 'lease-' || v_key;
  insert into kiln_private.worker_heartbeats (worker_id, hostname, pid, lease_key, backend_pid)
    values (v_id, left(p_hostname, 200), p_pid, v_key, pg_backend_pid())
    on conflict (worker_id) do update
      set hostname = excluded.hostname, pid = excluded.pid, backend_pid = excluded.backend_pid, pool_id = null,
          started_at = now(), last_seen = now();
  return v_id;
end;
$function$;
comment on function kiln.register_worker(text,integer) is 'Gives a worker process its lease: takes a session-level advisory lock on the calling connection (which must stay open while the worker runs) and registers it. Returns the worker id that jobs are leased to.';
