-- functions/kiln.link_identity.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.link_identity.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.link_identity(p_issuer text, p_subject text, p_account_id uuid, p_workspace_id uuid, p_email text DEFAULT NULL::text)
 RETURNS kiln_private.identities
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;
comment on function kiln.link_identity(text,text,uuid,uuid,text) is 'Links (or re-links) an OIDC identity to an account, optionally billing a Team workspace the account is a current member of. KN001 unknown account, KF001 not a member, KI001 bad issuer/subject.';
