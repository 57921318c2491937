-- functions/kiln_private.nudge_waiting_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.nudge_waiting_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.nudge_waiting_generation(p_account_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_next kiln_private.generations;
begin
  -- Locked, so that it cannot interleave with kiln.start_generation of the same generation (which
  -- locks it too); one being started is skipped for the next.
  select * into v_next from kiln_private.generations
    where account_id = p_account_id and status = 'pending' and waiting
    -- Interactive work first (docs/api.md, "Batches"): a waiting batch line goes after it.
    order by (batch_id is not null), created_at
    limit 1
    for update skip locked;
  if found then
    -- Same job key: moves the waiting job's run_at to now. Should a worker have just picked that
    -- job up, add_job queues a new one instead and start_generation ends the old (superseded).
    perform graphile_worker.add_job('generation__run', json_build_object('id', v_next.id),
                                    job_key => v_next.id::text, priority => case when v_next.batch_id is null then 0 else 10 end,
                                    max_attempts => kiln_private.generation_job_attempts());
  end if;
end;
$function$;
comment on function kiln_private.nudge_waiting_generation(uuid) is 'Runs the oldest slot-waiting generation of an account now (called when a slot frees), interactive ones before batch lines; one being started at this moment is skipped.';
