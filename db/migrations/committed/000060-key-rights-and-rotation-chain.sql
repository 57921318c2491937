--! Previous: sha1:623338cc94fbd718c0b8bc6f128bc8204f843a58
--! Hash: sha1:b9528c8f46deed9f7d9a00c665fb978216bda099
--! Message: Keys act only within their caller's rights: rotate, revoke and get check every scope; a rotation ends older secrets

--! split: 1-current.sql
-- Enter migration here

--! split: 2-key-rights.sql
-- Issue 37: a principal acts only within its own rights (docs/security.md#api-keys).
-- Reading, rotating and revoking a key need the caller to hold every scope of it (KF002, 403
-- forbidden); a rotation ends every older secret but the one it replaces; a key's entry says how
-- many of its secrets are live and until when the last older one works.

create or replace function kiln_private.require_key_rights(p_caller_scopes text[], p_scopes text[])
 returns void
 language plpgsql
 immutable
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_extra text[];
begin
  select array_agg(s order by s) into v_extra from unnest(p_scopes) s where not (s = any (coalesce(p_caller_scopes, '{}')));
  if v_extra is not null then
    raise exception 'This key has scopes the caller lacks (%): only a credential holding every scope of a key may read, rotate or revoke it.',
      array_to_string(v_extra, ', ') using errcode = 'KF002';
  end if;
end;
$function$;
comment on function kiln_private.require_key_rights(text[],text[]) is 'Raises KF002 (403 forbidden) unless the caller''s scopes hold every scope of the key (p_scopes). Unknown caller scopes (null) hold none.';

create or replace function kiln_private.key_json(k kiln_private.api_keys, p_used bigint)
 returns json
 language sql
 stable
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  -- liveSecrets: the current secret while the key is live, plus the older ones still in their
  -- grace; graceEndsAt: when the last older one stops working (rounded up to the second).
  select json_build_object(
    'id', k.id, 'name', k.name, 'prefix', k.display_prefix, 'scopes', k.scopes, 'rpm', k.rpm,
    'workspaceId', k.workspace_id, 'budgetMicros', k.budget_micros, 'usedMicros', coalesce(p_used, 0),
    'createdAt', to_char(k.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'lastUsedAt', to_char(k.last_used_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'expiresAt', to_char(k.expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'revokedAt', to_char(k.revoked_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'liveSecrets', case when g.live then 1 + g.n else 0 end,
    'graceEndsAt', case when g.live and g.n > 0 then
      to_char((date_trunc('second', g.until) + case when g.until > date_trunc('second', g.until) then interval '1 second' else interval '0' end)
              at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') end)
  from (select k.revoked_at is null and (k.expires_at is null or k.expires_at > now()) as live,
               count(x.key_hash)::int as n, max(x.expires_at) as until
        from kiln_private.api_key_grace x where x.key_id = k.id and x.expires_at > now()) g;
$function$;
comment on function kiln_private.key_json(kiln_private.api_keys,bigint) is 'A key as GET /keys lists it (never its hash or a secret), with liveSecrets (the current secret and older ones in their grace; 0 once revoked or expired) and graceEndsAt (when the last older secret stops working; null when none).';

drop function if exists kiln.rotate_key(uuid,uuid,uuid,bytea,text,integer);
create or replace function kiln.rotate_key(p_account_id uuid, p_workspace_id uuid, p_caller_scopes text[], p_key_id uuid, p_key_hash bytea, p_display_prefix text, p_grace_seconds integer)
 returns json
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_key kiln_private.api_keys;
begin
  if p_grace_seconds is null or p_grace_seconds < 0 or p_grace_seconds > 604800 then
    raise exception 'graceSeconds must be between 0 and 604800 (7 days)' using errcode = 'KI001';
  end if;
  select * into v_key from kiln_private.visible_key(p_account_id, p_workspace_id, p_key_id);
  if v_key.id is null then
    raise exception 'key not found' using errcode = 'KN001';
  end if;
  select * into v_key from kiln_private.api_keys where id = v_key.id for update;
  -- Before any state is told: a weaker caller learns nothing more than that the key exists.
  perform kiln_private.require_key_rights(p_caller_scopes, v_key.scopes);
  if v_key.revoked_at is not null then
    raise exception 'the key is revoked; create a new key' using errcode = 'KT001';
  end if;
  if v_key.expires_at is not null and v_key.expires_at <= now() then
    raise exception 'the key has expired; create a new key' using errcode = 'KT001';
  end if;
  -- One chain: every older secret ends now; only the one this rotation replaces keeps the grace asked.
  delete from kiln_private.api_key_grace where key_id = v_key.id;
  if p_grace_seconds > 0 then
    insert into kiln_private.api_key_grace (key_hash, key_id, display_prefix, expires_at)
      values (v_key.key_hash, v_key.id, v_key.display_prefix, now() + make_interval(secs => p_grace_seconds));
  end if;
  update kiln_private.api_keys set key_hash = p_key_hash, display_prefix = p_display_prefix, rotated_at = now()
    where id = v_key.id returning * into v_key;
  return kiln_private.key_json(v_key, kiln_private.key_used(v_key));
end;
$function$;
comment on function kiln.rotate_key(uuid,uuid,text[],uuid,bytea,text,integer) is 'POST /keys/{id}/rotate: a new secret under the same id; the secret it replaces stays valid for p_grace_seconds (0 to 7 days), every older one ends at once, then they get the same 401 as any unknown key. KN001 not the caller''s scope''s, KF002 a key with a scope the caller (p_caller_scopes) lacks, KT001 revoked or expired.';

drop function if exists kiln.revoke_key(uuid,uuid,uuid);
create or replace function kiln.revoke_key(p_account_id uuid, p_workspace_id uuid, p_caller_scopes text[], p_key_id uuid)
 returns json
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_key kiln_private.api_keys;
begin
  select * into v_key from kiln_private.visible_key(p_account_id, p_workspace_id, p_key_id);
  if v_key.id is null then
    raise exception 'key not found' using errcode = 'KN001';
  end if;
  perform kiln_private.require_key_rights(p_caller_scopes, v_key.scopes);
  update kiln_private.api_keys set revoked_at = coalesce(revoked_at, now()) where id = v_key.id returning * into v_key;
  delete from kiln_private.api_key_grace where key_id = v_key.id;
  return kiln_private.key_json(v_key, kiln_private.key_used(v_key));
end;
$function$;
comment on function kiln.revoke_key(uuid,uuid,text[],uuid) is 'DELETE /keys/{id}: revokes every secret of the key at once (the next request with any of them gets 401). Idempotent. KN001 not the caller''s scope''s, KF002 a key with a scope the caller (p_caller_scopes) lacks.';

create or replace function kiln.get_key(p_account_id uuid, p_workspace_id uuid, p_caller_scopes text[], p_key_id uuid)
 returns json
 language plpgsql
 stable security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_key kiln_private.api_keys;
begin
  select * into v_key from kiln_private.visible_key(p_account_id, p_workspace_id, p_key_id);
  if v_key.id is null then
    raise exception 'key not found' using errcode = 'KN001';
  end if;
  perform kiln_private.require_key_rights(p_caller_scopes, v_key.scopes);
  return kiln_private.key_json(v_key, kiln_private.key_used(v_key));
end;
$function$;
comment on function kiln.get_key(uuid,uuid,text[],uuid) is 'GET /keys/{id}: one key of the caller''s billing scope (never its hash). KN001 not the caller''s scope''s, KF002 a key with a scope the caller (p_caller_scopes) lacks.';

create or replace function kiln.key_carries_scope(p_key_id uuid, p_scope text)
 returns boolean
 language sql
 stable security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  select coalesce((select p_scope = any (k.scopes) from kiln_private.api_keys k where k.id = p_key_id), false);
$function$;
comment on function kiln.key_carries_scope(uuid,text) is 'Whether a key (or session) was given a scope, whatever its user may use: a refused admin request with the admin scope is a user who is not an admin, and says so.';

create or replace function kiln_private.require_admin(p_account_id uuid)
 returns void
 language plpgsql
 stable
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
begin
  -- The authorization path already refused a non-admin (the admin scope counts only for admins);
  -- a write checks again in its own transaction, so a revoked admin cannot race it.
  perform 1 from kiln_private.accounts a where a.id = p_account_id and (a.is_admin or a.admin_by_group);
  if not found then
    raise exception 'This account is not an admin.' using errcode = 'KF001';
  end if;
end;
$function$;
comment on function kiln_private.require_admin(uuid) is 'Raises KF001 ("This account is not an admin.") unless the account is an admin (operator flag or SSO group).';

create or replace function kiln.require_webhook_rights(p_account_id uuid, p_workspace_id uuid, p_id uuid)
 returns void
 language plpgsql
 stable security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
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
