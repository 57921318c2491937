-- functions/kiln_private.tg_workflows__audit.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_workflows__audit.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_workflows__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if new.deleted_at is not null then
    if tg_op = 'UPDATE' and old.deleted_at is null then
      perform kiln_private.audit(new.scope_id, 'workflow.deleted', 'workflow', new.id::text,
        jsonb_build_object('name', new.name, 'version', new.version));
    end if;
  elsif tg_op = 'INSERT' or old.version is distinct from new.version then
    perform kiln_private.audit(new.scope_id, 'workflow.saved', 'workflow', new.id::text,
      jsonb_build_object('name', new.name, 'version', new.version));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_workflows__audit() is 'Trigger: workflow.saved (create or replace: a new version) and workflow.deleted in the audit log.';
