-- functions/kiln.fail_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.fail_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.fail_generation(p_id uuid, p_error text)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
  v_out kiln_private.workflow_run_outputs;
  v_run_id uuid;
  v_error text := left(coalesce(nullif(p_error, ''), 'generation failed'), 1000);
begin
  select run_id into v_run_id from kiln_private.generations where id = p_id;
  if not found then
    raise exception 'generation not found' using errcode = 'KN001';
  end if;
  if v_run_id is not null then
    perform 1 from kiln_private.workflow_runs where id = v_run_id for update;
  end if;
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if not kiln_private.end_generation(p_id, v_error) then
    return json_build_object('applied', false, 'status', v_gen.status);
  end if;
  if v_run_id is not null then
    -- The run fails at its first failed output; what has not started is abandoned.
    update kiln_private.workflow_run_outputs
      set status = 'failed', error = v_error, finished_at = clock_timestamp(), updated_at = now()
      where run_id = v_run_id and output_node_id = v_gen.output_node_id
      returning * into v_out;
    perform kiln_private.fail_workflow_run(v_run_id,
      format('output "%s" of prompt "%s" failed: %s', left(v_out.output_node_id, 200), left(v_out.prompt_node_id, 200), v_error));
    perform kiln_private.note_workflow_progress(v_run_id, 1);
  end if;
  perform kiln_private.nudge_waiting_generation(v_gen.account_id);
  return json_build_object('applied', true, 'status', 'failed');
end;
$function$;
comment on function kiln.fail_generation(uuid,text) is 'Fails a generation with a client-safe message and releases its reservation in one call; a run output also fails its run (not-started outputs are abandoned). Idempotent.';
