-- functions/kiln_private.lease_held.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.lease_held.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.lease_held(p_worker_id text, p_job_id bigint, p_stale_seconds integer)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- The one lease rule, for generations and workflow outputs alike: the executing worker is alive
  -- and still holds the job it runs under (a job that failed or was released lets go of it).
  return p_worker_id is not null
     and kiln_private.worker_alive(p_worker_id, p_stale_seconds)
     and exists (select 1 from graphile_worker.jobs j where j.id = p_job_id and j.locked_at is not null);
end;
$function$;
comment on function kiln_private.lease_held(text,bigint,integer) is 'Whether the worker that leased a generation or workflow output still runs it (alive, its job still locked; read from the graphile_worker.jobs view): such work is never taken over.';
