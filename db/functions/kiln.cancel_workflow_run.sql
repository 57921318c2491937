-- functions/kiln.cancel_workflow_run.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.cancel_workflow_run.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.cancel_workflow_run(p_account_id uuid, p_workflow_id uuid, p_run_id uuid)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_run kiln_private.workflow_runs;
  v_out record;
  v_settled json;
begin
  select * into v_run from kiln_private.workflow_runs
    where id = p_run_id and account_id = p_account_id and workflow_id = p_workflow_id
    for update;
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  if v_run.status in ('completed', 'failed') then
    return json_build_object('outcome', 'conflict', 'status', v_run.status);
  end if;
  -- What this cancel settles, read under the run's lock (every settlement takes it first): the
  -- generations of outputs not started (abandoned below: failed) and of outputs in flight
  -- (canceled below).
  select coalesce(json_agg(json_build_object('type', g.type, 'model_id', g.model_id,
           'status', case when o.status = 'running' then 'canceled' else 'failed' end) order by o.ordinal), '[]'::json)
    into v_settled
    from kiln_private.workflow_run_outputs o
    join kiln_private.generations g on g.id = o.generation_id
    where o.run_id = p_run_id and o.status in ('waiting', 'queued', 'running') and g.status not in ('completed', 'failed');
  -- The run fails with 'canceled' first (outputs not started are abandoned, nothing charged) ...
  perform kiln_private.fail_workflow_run(p_run_id, 'canceled');
  -- ... then each output in flight is canceled like a generation: failed 'canceled', released,
  -- its provider call aborted. Completed outputs keep their results and charges.
  for v_out in
    select o.generation_id from kiln_private.workflow_run_outputs o
      where o.run_id = p_run_id and o.status in ('queued', 'running') and o.generation_id is not null
      order by o.ordinal
  loop
    perform kiln_private.cancel_generation(v_out.generation_id);
  end loop;
  return json_build_object('outcome', 'canceled', 'run', kiln.get_workflow_run(p_account_id, p_workflow_id, p_run_id), 'settled', v_settled);
end;
$function$;
comment on function kiln.cancel_workflow_run(uuid,uuid,uuid) is 'Cancels a pending or running run of the account''s workflow: the run fails with error ''canceled'', outputs not started are abandoned, outputs in flight are canceled (kiln_private.cancel_generation: released, their workers told to abort), completed ones stay. Outcome canceled (with the run as kiln.get_workflow_run reads it, and settled: the generations it ended, each {type, model_id, status canceled|failed}, for the canceling process''s metrics), conflict (already completed or failed) or missing. Never raises for these outcomes.';
