-- functions/kiln_private.tg_workflow_runs__notify.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_workflow_runs__notify.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_workflow_runs__notify()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_run_id uuid;
begin
  -- One payload per run for both tables, without a status: identical payloads of one transaction
  -- are delivered once, so settling an output (its row, the run's counters, maybe the run's
  -- status) wakes each waiter once.
  if tg_table_name = 'workflow_runs' then
    v_run_id := new.id;
  else
    v_run_id := new.run_id;
  end if;
  perform pg_notify('kiln_status', json_build_object('k', 'run', 'id', v_run_id, 'a', new.account_id)::text);
  return null;
end;
$function$;
comment on function kiln_private.tg_workflow_runs__notify() is 'Trigger on workflow_runs and workflow_run_outputs: NOTIFY kiln_status with {k: run, id: run id, a: account} when a run''s status or counters change or an output settles.';
