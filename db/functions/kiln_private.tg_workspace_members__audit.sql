-- functions/kiln_private.tg_workspace_members__audit.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_workspace_members__audit.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_workspace_members__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if tg_op = 'INSERT' or (old.left_at is not null and new.left_at is null) then
    perform kiln_private.audit(new.workspace_id, 'workspace.member_added', 'account', new.account_id::text,
      jsonb_build_object('role', new.role));
  elsif old.left_at is null and new.left_at is not null then
    perform kiln_private.audit(new.workspace_id, 'workspace.member_removed', 'account', new.account_id::text,
      jsonb_build_object('role', old.role));
  elsif old.role is distinct from new.role then
    perform kiln_private.audit(new.workspace_id, 'workspace.member_updated', 'account', new.account_id::text,
      jsonb_build_object('role', jsonb_build_object('from', old.role, 'to', new.role)));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_workspace_members__audit() is 'Trigger: workspace.member_added / member_removed / member_updated (role) in the audit log, in the workspace''s scope.';
