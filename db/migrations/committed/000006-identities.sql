--! Previous: sha1:8d2d151536475f393eb52d124de0f6e31fc1956a
--! Hash: sha1:609118d4f3f94b2ab84c89e2c771ae0018f1c7f1
--! Message: identities

--! split: 5-identities.sql
-- Identities: OpenID Connect sign-ins (issuer + subject) mapped to Kiln accounts for the MCP
-- endpoint, each optionally billing a chosen Team workspace. Linked by an operator
-- (`kiln identity link`) or, when the service enables it, automatically by verified email.
--
-- Idempotent (graphile-migrate "current"): drop what this file creates, then create it again.

drop function if exists kiln.link_identity(text, text, uuid, uuid, text);
drop function if exists kiln.resolve_identity(text, text, text, boolean, boolean);
drop function if exists kiln.unlink_identity(text, text);
drop table if exists kiln_private.identities cascade;

create table kiln_private.identities (
  -- The token's `iss`, exactly as the identity provider writes it.
  issuer text not null check (length(issuer) between 1 and 2048),
  -- The token's `sub`: stable per user at that issuer (an email is not).
  subject text not null check (length(subject) between 1 and 255),
  account_id uuid not null references kiln_private.accounts (id) on delete cascade,
  -- Last email seen in a token (informational; never used to authorize).
  email text check (length(email) <= 320),
  -- The Team workspace this identity's generations bill to; null = the personal budget.
  -- Re-checked on every spending call (plan active, caller still a member), exactly like a
  -- workspace-bound API key: no fallback to the personal budget.
  workspace_id uuid references kiln_private.workspaces (id),
  created_at timestamptz not null default now(),
  last_seen_at timestamptz,
  primary key (issuer, subject)
);
create index identities_account_idx on kiln_private.identities (account_id);
comment on table kiln_private.identities is
  'OpenID Connect identities (issuer + subject) allowed to act as a Kiln account on the MCP endpoint, with an optional Team workspace to bill.';

create function kiln.link_identity(p_issuer text, p_subject text, p_account_id uuid, p_workspace_id uuid, p_email text default null)
  returns kiln_private.identities
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row kiln_private.identities;
begin
  if p_issuer is null or p_subject is null or p_issuer = '' or p_subject = '' then
    raise exception 'issuer and subject are required' using errcode = 'KI001';
  end if;
  perform 1 from kiln_private.accounts where id = p_account_id;
  if not found then
    raise exception 'account not found' using errcode = 'KN001';
  end if;
  if p_workspace_id is not null then
    -- Any current member may bill their own sign-in to the Team pool (as in the application);
    -- whether the plan is active is checked on each call, not here.
    perform 1 from kiln_private.workspace_members
      where workspace_id = p_workspace_id and account_id = p_account_id and left_at is null;
    if not found then
      raise exception 'the account is not a member of that workspace' using errcode = 'KF001';
    end if;
  end if;
  insert into kiln_private.identities as i (issuer, subject, account_id, email, workspace_id)
    values (p_issuer, p_subject, p_account_id, p_email, p_workspace_id)
    on conflict (issuer, subject) do update
      set account_id = excluded.account_id,
          workspace_id = excluded.workspace_id,
          email = coalesce(excluded.email, i.email)
    returning * into v_row;
  return v_row;
exception
  when check_violation then
    raise exception 'invalid identity (issuer at most 2048 characters, subject at most 255)' using errcode = 'KI001';
end;
$$;
comment on function kiln.link_identity(text, text, uuid, uuid, text) is
  'Links (or re-links) an OIDC identity to an account, optionally billing a Team workspace the account is a current member of. KN001 unknown account, KF001 not a member, KI001 bad issuer/subject.';

create function kiln.unlink_identity(p_issuer text, p_subject text)
  returns kiln_private.identities
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row kiln_private.identities;
begin
  delete from kiln_private.identities where issuer = p_issuer and subject = p_subject returning * into v_row;
  if not found then
    raise exception 'identity not found' using errcode = 'KN001';
  end if;
  return v_row;
end;
$$;
comment on function kiln.unlink_identity(text, text) is
  'Removes an identity link; the next MCP tool call of that sign-in is refused as unlinked. KN001 when absent.';

create function kiln.resolve_identity(p_issuer text, p_subject text, p_email text, p_email_verified boolean, p_auto_link boolean)
  returns table (account_id uuid, workspace_id uuid, linked_now boolean)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row kiln_private.identities;
  v_account uuid;
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
  insert into kiln_private.identities as i (issuer, subject, account_id, email, last_seen_at)
    values (p_issuer, p_subject, v_account, p_email, now())
    on conflict (issuer, subject) do nothing;
  -- A concurrent first call may have linked it a moment earlier: answer with whatever is stored.
  return query select i.account_id, i.workspace_id, true
    from kiln_private.identities i where i.issuer = p_issuer and i.subject = p_subject;
end;
$$;
comment on function kiln.resolve_identity(text, text, text, boolean, boolean) is
  'The account (and Team workspace to bill, or null) of an OIDC identity; no row when it is not linked. With p_auto_link, an unlinked identity whose provider-verified email matches an account is linked to it (personal budget).';
