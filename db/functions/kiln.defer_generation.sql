-- functions/kiln.defer_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.defer_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.defer_generation(p_id uuid, p_worker_id text, p_job_id bigint, p_error text, p_counted boolean DEFAULT true)
 RETURNS kiln_private.generations
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
begin
  update kiln_private.generations
    set status = 'pending', worker_id = null, job_id = null, last_error = left(p_error, 1000), updated_at = now(),
        -- An execution cut short by its worker (shutdown, lost lease) is not an attempt.
        attempts = case when p_counted then attempts else greatest(attempts - 1, 0) end,
        crash_streak = case when p_counted then 0 else crash_streak end
    where id = p_id and status = 'processing' and worker_id = p_worker_id and job_id = p_job_id
    returning * into v_gen;
  if found then
    if v_gen.run_id is not null then
      update kiln_private.workflow_run_outputs set status = 'queued', updated_at = now()
        where run_id = v_gen.run_id and output_node_id = v_gen.output_node_id and status = 'running';
    end if;
    -- The retry is a new job (this one, still locked, loses the key and ends): graphile-worker's
    -- backoff after a counted attempt (e^attempts seconds, at most e^10), at once after a shutdown.
    perform graphile_worker.add_job('generation__run', json_build_object('id', p_id),
      run_at => now() + case when p_counted then make_interval(secs => exp(least(v_gen.attempts, 10))) else interval '0' end,
      job_key => p_id::text, priority => case when v_gen.batch_id is null then 0 else 10 end,
      max_attempts => kiln_private.generation_job_attempts());
    perform kiln_private.nudge_waiting_generation(v_gen.account_id);
  end if;
  return v_gen;
end;
$function$;
comment on function kiln.defer_generation(uuid,text,bigint,text,boolean) is 'A transient failure: back to pending (freeing the slot, keeping any reservation) and a new job for the retry, after graphile-worker''s backoff when the attempt counts, at once when it does not (p_counted false: the worker shut down or lost its lease during it). Only the lease holder may defer.';
