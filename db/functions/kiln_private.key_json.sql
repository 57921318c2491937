-- functions/kiln_private.key_json.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.key_json.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.key_json(k kiln_private.api_keys, p_used bigint)
 RETURNS json
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- liveSecrets: the current secret while the key is live, plus the older ones still in their
  -- grace; graceEndsAt: when the last older one stops working (rounded up to the second).
  select json_build_object(
    'id', k.id, 'name', k.name, 'prefix', k.display_prefix, 'scopes', k.scopes, 'rpm', k.rpm,
    'workspaceId', k.workspace_id, 'budgetMicros', k.budget_micros, 'usedMicros', coalesce(p_used, 0),
    'createdAt', to_char(k.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'lastUsedAt', to_char(k.last_used_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'expiresAt', to_char(k.expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'revokedAt', to_char(k.revoked_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'requireEndUser', k.require_end_user,
    'liveSecrets', case when g.live then 1 + g.n else 0 end,
    'graceEndsAt', case when g.live and g.n > 0 then
      to_char((date_trunc('second', g.until) + case when g.until > date_trunc('second', g.until) then interval '1 second' else interval '0' end)
              at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') end)
  from (select k.revoked_at is null and (k.expires_at is null or k.expires_at > now()) as live,
               count(x.key_hash)::int as n, max(x.expires_at) as until
        from kiln_private.api_key_grace x where x.key_id = k.id and x.expires_at > now()) g;
$function$;
comment on function kiln_private.key_json(kiln_private.api_keys,bigint) is 'A key as GET /keys lists it (never its hash or a secret), with requireEndUser, liveSecrets (the current secret and older ones in their grace; 0 once revoked or expired) and graceEndsAt (when the last older secret stops working; null when none).';
