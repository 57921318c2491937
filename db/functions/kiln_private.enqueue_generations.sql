-- functions/kiln_private.enqueue_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.enqueue_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.enqueue_generations(p_ids uuid[], p_max_attempts integer)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
begin
  if coalesce(cardinality(p_ids), 0) = 0 then
    return;
  end if;
  -- One call for the batch; job key = generation id, so a duplicate enqueue collapses into one job.
  -- The job's cap is Kiln's (generation_job_attempts); p_max_attempts stays on the generations.
  perform graphile_worker.add_jobs(array(
    select row('generation__run', json_build_object('id', g), null, null, kiln_private.generation_job_attempts(), g::text, null, null)::graphile_worker.job_spec
    from unnest(p_ids) g));
end;
$function$;
comment on function kiln_private.enqueue_generations(uuid[],integer) is 'Queues generation__run jobs for existing generations (graphile_worker.add_jobs; job key = generation id; max_attempts kiln_private.generation_job_attempts(), whatever p_max_attempts).';
