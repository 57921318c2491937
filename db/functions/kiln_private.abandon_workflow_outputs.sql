-- functions/kiln_private.abandon_workflow_outputs.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.abandon_workflow_outputs.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.abandon_workflow_outputs(p_run_id uuid, p_outputs text[])
 RETURNS integer
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
declare
  v_out record;
  v_n int := 0;
begin
  -- Not started (or between retries): never run, and nothing is charged. Their generations end
  -- failed (a job that still picks one up finds it done).
  for v_out in
    select o.output_node_id, o.generation_id from kiln_private.workflow_run_outputs o
      where o.run_id = p_run_id and o.status in ('waiting', 'queued')
        and (p_outputs is null or o.output_node_id = any (p_outputs))
      order by o.ordinal
      for update
  loop
    perform kiln_private.end_generation(v_out.generation_id, 'abandoned: the run ended before this output started; nothing was charged');
    update kiln_private.workflow_run_outputs
      set status = 'abandoned', finished_at = clock_timestamp(), updated_at = now()
      where run_id = p_run_id and output_node_id = v_out.output_node_id;
    v_n := v_n + 1;
  end loop;
  return v_n;
end;
$function$;
comment on function kiln_private.abandon_workflow_outputs(uuid,text[]) is 'Marks not-started outputs of a run (all, or the given ones) abandoned, failing their generations and releasing any reservation. Returns how many.';
