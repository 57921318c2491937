-- functions/kiln_private.tg_workflows__outbox.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_workflows__outbox.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_workflows__outbox()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if new.deleted_at is not null then
    if tg_op = 'UPDATE' and old.deleted_at is null then
      perform kiln_private.emit_event(new.scope_id, 'workflow.deleted', new.id, kiln_private.workflow_event_data(new));
    end if;
  elsif tg_op = 'INSERT' or new.version is distinct from old.version then
    perform kiln_private.emit_event(new.scope_id, 'workflow.saved', new.id, kiln_private.workflow_event_data(new));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_workflows__outbox() is 'Trigger: a save (insert, or a new version) emits workflow.saved, a delete workflow.deleted, to the workflow''s scope; a run''s write-back (graph only) emits nothing.';
