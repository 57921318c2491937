-- functions/kiln_private.tg_workspaces__audit.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_workspaces__audit.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_workspaces__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if tg_op = 'INSERT' then
    perform kiln_private.audit(new.id, 'workspace.created', 'workspace', new.id::text,
      jsonb_build_object('name', new.name, 'ownerId', new.owner_id));
  elsif (old.plan_status, old.plan_budget_micros, old.name) is distinct from (new.plan_status, new.plan_budget_micros, new.name) then
    perform kiln_private.audit(new.id, 'workspace.updated', 'workspace', new.id::text, jsonb_build_object(
      'name', new.name, 'planStatus', jsonb_build_object('from', old.plan_status, 'to', new.plan_status),
      'budgetMicros', jsonb_build_object('from', old.plan_budget_micros, 'to', new.plan_budget_micros)));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_workspaces__audit() is 'Trigger: workspace.created and workspace.updated (plan status, budget, name) in the audit log.';
