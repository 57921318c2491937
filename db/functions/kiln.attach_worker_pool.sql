-- functions/kiln.attach_worker_pool.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.attach_worker_pool.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.attach_worker_pool(p_worker_id text, p_pool_id text)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  update kiln_private.worker_heartbeats set pool_id = p_pool_id, last_seen = now() where worker_id = p_worker_id;
$function$;
comment on function kiln.attach_worker_pool(text,text) is 'Records the graphile-worker pool id (what jobs are locked_by) of a registered worker.';
