--! Previous: sha1:b9528c8f46deed9f7d9a00c665fb978216bda099
--! Hash: sha1:da5a484a62274b347b4c2b8644fed8fd57304a85
--! Message: Identity links are audited: identity.linked and identity.unlinked

--! split: 1-current.sql
-- Enter migration here

--! split: 3-identity-audit.sql
-- Identity links (who may act as an account over MCP and SSO) are audited: identity.linked and
-- identity.unlinked, written by a trigger on the table, so the operator's `kiln identity link` and
-- `unlink`, SSO's provisioning and MCP's automatic link by verified email are all recorded.

create or replace function kiln_private.tg_identities__audit()
 returns trigger
 language plpgsql
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
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

drop trigger if exists tg_identities__audit on kiln_private.identities;
create trigger tg_identities__audit after insert or delete or update of account_id, workspace_id on kiln_private.identities
  for each row execute function kiln_private.tg_identities__audit();

-- MCP's automatic link by verified email is the identity's own doing: its entry names the identity
-- as the actor (not the operator) unless the caller set one; the caller's setting is restored after.
CREATE OR REPLACE FUNCTION kiln.resolve_identity(p_issuer text, p_subject text, p_email text, p_email_verified boolean, p_auto_link boolean)
 RETURNS TABLE(account_id uuid, workspace_id uuid, linked_now boolean)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_row kiln_private.identities;
  v_account uuid;
  v_actor text;
begin
  select * into v_row from kiln_private.identities i where i.issuer = p_issuer and i.subject = p_subject;
  if found then
    -- Touch at most once a minute: a busy agent must not turn every tool call into a row write.
    if v_row.last_seen_at is null or v_row.last_seen_at < now() - interval '1 minute'
       or v_row.email is distinct from coalesce(p_email, v_row.email) then
      update kiln_private.identities i
        set last_seen_at = now(), email = coalesce(p_email, i.email)
        where i.issuer = p_issuer and i.subject = p_subject;
    end if;
    return query select v_row.account_id, v_row.workspace_id, false;
    return;
  end if;
  -- Auto-link only when the service enables it, only on an email the provider says it verified,
  -- and only to the one account with that email; it never picks a workspace (personal budget).
  if not coalesce(p_auto_link, false) or not coalesce(p_email_verified, false) or p_email is null then
    return;
  end if;
  select a.id into v_account from kiln_private.accounts a where lower(a.email) = lower(p_email);
  if not found then
    return;
  end if;
  v_actor := current_setting('kiln.actor', true);
  if nullif(v_actor, '') is null then
    perform set_config('kiln.actor', jsonb_build_object('type', 'identity', 'id', left(p_issuer || ' ' || p_subject, 200))::text, true);
  end if;
  insert into kiln_private.identities as i (issuer, subject, account_id, email, last_seen_at)
    values (p_issuer, p_subject, v_account, p_email, now())
    on conflict (issuer, subject) do nothing;
  perform set_config('kiln.actor', coalesce(v_actor, ''), true);
  -- A concurrent first call may have linked it a moment earlier: answer with whatever is stored.
  return query select i.account_id, i.workspace_id, true
    from kiln_private.identities i where i.issuer = p_issuer and i.subject = p_subject;
end;
$function$;
comment on function kiln.resolve_identity(text,text,text,boolean,boolean) is 'The account (and Team workspace to bill, or null) of an OIDC identity; no row when it is not linked. With p_auto_link, an unlinked identity whose provider-verified email matches an account is linked to it (personal budget), audited as identity.linked with the identity as the actor.';

comment on table kiln_private.audit_log is 'Who changed what, append-only: one row per change to keys, sessions, identity links, webhooks, workflows, accounts, workspaces and the catalog, written in the transaction that makes it. scope_id is the billing scope it belongs to (an account or a workspace; null = the service: the catalog, a refused sign-in). Never holds a secret.';
comment on view kiln.audit_log is 'Analysts: who changed what (keys, sessions, identity links, webhooks, workflows, accounts, workspaces, the catalog), one row per change, append-only. No secrets.';
