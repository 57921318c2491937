-- functions/kiln_private.unfinishable_message.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.unfinishable_message.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.unfinishable_message(p_id uuid)
 RETURNS text
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select case when g.run_id is null
    then format('no worker can finish this generation: its job left the queue (removed, or out of retries%s). Nothing was charged; create the generation again.',
                case when g.crashes > 0 then format(' after its worker stopped %s times', g.crashes) else '' end)
    else format('no worker can finish this output: its job left the queue (removed, or out of retries%s). Nothing was charged; retry the run.',
                case when g.crashes > 0 then format(' after its worker stopped %s times', g.crashes) else '' end)
  end
  from kiln_private.generations g where g.id = p_id;
$function$;
comment on function kiln_private.unfinishable_message(uuid) is 'The error of a generation that no job can finish any more (the sweep and the run-window check fail it): what happened and what to do.';
