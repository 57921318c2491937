-- functions/kiln.sign_in.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.sign_in.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.sign_in(p_issuer text, p_subject text, p_email text, p_email_verified boolean, p_allowed_domains text[], p_admin_by_group boolean)
 RETURNS TABLE(account_id uuid, outcome text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_column
declare
  v_account uuid;
  v_domain text := lower(split_part(coalesce(p_email, ''), '@', 2));
begin
  -- 1. An identity already linked (kiln identity link, the same links MCP uses).
  select i.account_id into v_account from kiln_private.identities i where i.issuer = p_issuer and i.subject = p_subject;
  if v_account is not null then
    update kiln_private.identities set last_seen_at = now() where issuer = p_issuer and subject = p_subject;
    if p_admin_by_group is not null then
      update kiln_private.accounts set admin_by_group = p_admin_by_group where id = v_account and admin_by_group <> p_admin_by_group;
    end if;
    return query select v_account, 'linked'::text;
    return;
  end if;
  -- 2. A verified email of an allowed domain: a new user on the default tier, linked.
  if coalesce(p_email_verified, false) and v_domain <> '' and v_domain = any (coalesce(p_allowed_domains, '{}'))
     and p_email ~ '^[^@\s]+@[^@\s]+$' and length(p_email) <= 320 then
    select a.id into v_account from kiln_private.accounts a where lower(a.email) = lower(p_email);
    if v_account is not null then
      -- An account with that email exists but is not linked to this identity: an operator links
      -- it (kiln identity link); taking it over by email alone is refused.
      perform kiln_private.audit(null, 'session.refused', 'identity', left(p_issuer || ' ' || p_subject, 400),
        jsonb_build_object('reason', 'email_in_use', 'emailDomain', v_domain));
      return query select null::uuid, 'email_in_use'::text;
      return;
    end if;
    select (kiln.create_account(p_email)).id into v_account;
    insert into kiln_private.identities (issuer, subject, account_id, email) values (p_issuer, p_subject, v_account, p_email);
    if p_admin_by_group then
      update kiln_private.accounts set admin_by_group = true where id = v_account;
    end if;
    return query select v_account, 'provisioned'::text;
    return;
  end if;
  -- 3. Anyone else: refused, nothing created.
  perform kiln_private.audit(null, 'session.refused', 'identity', left(p_issuer || ' ' || p_subject, 400),
    jsonb_build_object('reason', case when v_domain = '' then 'no_email' when not coalesce(p_email_verified, false) then 'email_not_verified'
                                      else 'domain_not_allowed' end, 'emailDomain', nullif(v_domain, '')));
  return query select null::uuid, 'refused'::text;
end;
$function$;
comment on function kiln.sign_in(text,text,text,boolean,text[],boolean) is 'Who an SSO sign-in is: a linked identity''s user (linked); else, for a verified email of an allowed domain, a new user on the default tier, linked (provisioned); else nobody (refused, or email_in_use when an unlinked account has that email), audited as session.refused. p_admin_by_group (null = no admin group configured) refreshes the user''s admin-by-group flag.';
