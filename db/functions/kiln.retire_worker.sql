-- functions/kiln.retire_worker.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.retire_worker.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.retire_worker(p_worker_id text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_key int;
begin
  delete from kiln_private.worker_heartbeats where worker_id = p_worker_id returning lease_key into v_key;
  if v_key is not null then
    perform pg_advisory_unlock(1263094862, v_key); -- false (and harmless) on another session
  end if;
end;
$function$;
comment on function kiln.retire_worker(text) is 'Forgets a worker that shut down cleanly (and lets go of its lease on this session).';
