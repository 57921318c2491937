-- functions/kiln_private.tg_generations__outbox.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_generations__outbox.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_generations__outbox()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform kiln_private.emit_event(coalesce(new.workspace_id, new.account_id),
    case when new.status = 'completed' then 'generation.completed' else 'generation.failed' end,
    new.id, kiln_private.generation_body(new));
  return null;
end;
$function$;
comment on function kiln_private.tg_generations__outbox() is 'Trigger: a generation that is not a workflow output reaching completed or failed (canceled included) emits generation.completed / generation.failed to its billing scope.';
