-- functions/kiln_private.tg_identities__audit.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_identities__audit.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_identities__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if tg_op = 'INSERT' then
    perform kiln_private.audit(new.account_id, 'identity.linked', 'identity', left(new.issuer || ' ' || new.subject, 400),
      jsonb_build_object('issuer', new.issuer, 'subject', new.subject, 'workspaceId', new.workspace_id));
  elsif tg_op = 'DELETE' then
    perform kiln_private.audit(old.account_id, 'identity.unlinked', 'identity', left(old.issuer || ' ' || old.subject, 400),
      jsonb_build_object('issuer', old.issuer, 'subject', old.subject, 'workspaceId', old.workspace_id));
  elsif old.account_id is distinct from new.account_id then
    -- Re-linked to another account: it stops acting as the one and starts acting as the other,
    -- each in its own account's log.
    perform kiln_private.audit(old.account_id, 'identity.unlinked', 'identity', left(old.issuer || ' ' || old.subject, 400),
      jsonb_build_object('issuer', old.issuer, 'subject', old.subject, 'workspaceId', old.workspace_id, 'relinkedTo', new.account_id));
    perform kiln_private.audit(new.account_id, 'identity.linked', 'identity', left(new.issuer || ' ' || new.subject, 400),
      jsonb_build_object('issuer', new.issuer, 'subject', new.subject, 'workspaceId', new.workspace_id, 'previousAccountId', old.account_id));
  elsif old.workspace_id is distinct from new.workspace_id then
    -- Re-linked to the same account with another Team workspace to bill (or none).
    perform kiln_private.audit(new.account_id, 'identity.linked', 'identity', left(new.issuer || ' ' || new.subject, 400),
      jsonb_build_object('issuer', new.issuer, 'subject', new.subject, 'workspaceId', new.workspace_id, 'previousWorkspaceId', old.workspace_id));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_identities__audit() is 'Trigger: identity.linked (a new link, or a re-link to another account or billing workspace) and identity.unlinked (removed, or moved to another account) in the audit log, in the account''s scope, with the issuer, subject and billing workspace (never a token).';
