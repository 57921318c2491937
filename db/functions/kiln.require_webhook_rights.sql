-- functions/kiln.require_webhook_rights.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.require_webhook_rights.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.require_webhook_rights(p_account_id uuid, p_workspace_id uuid, p_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- A workspace's endpoint is changed (its URL, events, secret) or deleted only by the member who
  -- made it or a current owner or admin, as a workspace's keys are managed. A personal endpoint is
  -- its account's; one of another scope, or none, is left to the change's own 404.
  if p_workspace_id is null then
    return;
  end if;
  perform 1 from kiln_private.webhook_endpoints e
    where e.id = p_id and e.scope_id = p_workspace_id and e.account_id <> p_account_id
      and not exists (select 1 from kiln_private.workspace_members m
                      where m.workspace_id = p_workspace_id and m.account_id = p_account_id and m.left_at is null
                        and m.role in ('owner', 'admin'));
  if found then
    raise exception 'Only the member who made this webhook endpoint, or a workspace owner or admin, may change it, delete it or rotate its secret.'
      using errcode = 'KF002';
  end if;
end;
$function$;
comment on function kiln.require_webhook_rights(uuid,uuid,uuid) is 'PATCH, DELETE and rotate-secret of a workspace''s webhook endpoint: KF002 (403 forbidden) unless the caller made it or is a current owner or admin of the workspace. Nothing for a personal endpoint or an unknown one (the change answers 404).';
