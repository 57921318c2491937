-- functions/kiln.resolve_identity.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.resolve_identity.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

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
