-- functions/kiln_private.credentials.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.credentials.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.credentials(p_hashes bytea[])
 RETURNS TABLE(key_hash bytea, id uuid, account_id uuid, workspace_id uuid, scopes text[], rpm integer, tier text, last_used_at timestamp with time zone)
 LANGUAGE sql
 STABLE
AS $function$
  -- One index lookup per hash, whatever the size of the tables: the current secret by the keys'
  -- unique hash index, else a rotation's grace secret by its own, then the account by its key.
  -- A secret is live while its key is: not revoked, not expired, a session not idle; a secret
  -- a rotation replaced also until its grace ends. The admin scope counts only for admins.
  select h.key_hash, k.id, k.account_id, k.workspace_id,
         case when a.is_admin or a.admin_by_group then k.scopes else pg_catalog.array_remove(k.scopes, 'admin'::text) end,
         k.rpm, a.tier, k.last_used_at
  from pg_catalog.unnest(p_hashes) as h(key_hash)
  cross join lateral (
    select x.id, x.account_id, x.workspace_id, x.scopes, x.rpm, x.last_used_at, x.created_at, x.revoked_at, x.expires_at, x.idle_seconds
    from kiln_private.api_keys x where x.key_hash operator(pg_catalog.=) h.key_hash
    union all
    select x.id, x.account_id, x.workspace_id, x.scopes, x.rpm, x.last_used_at, x.created_at, x.revoked_at, x.expires_at, x.idle_seconds
    from kiln_private.api_key_grace g join kiln_private.api_keys x on x.id operator(pg_catalog.=) g.key_id
    where g.key_hash operator(pg_catalog.=) h.key_hash and g.expires_at operator(pg_catalog.>) pg_catalog.now()
  ) k
  join kiln_private.accounts a on a.id operator(pg_catalog.=) k.account_id
  where k.revoked_at is null
    and (k.expires_at is null or k.expires_at operator(pg_catalog.>) pg_catalog.now())
    and (k.idle_seconds is null
         or coalesce(k.last_used_at, k.created_at) operator(pg_catalog.+) pg_catalog.make_interval(secs => k.idle_seconds) operator(pg_catalog.>) pg_catalog.now());
$function$;
comment on function kiln_private.credentials(bytea[]) is 'The live credentials (API keys and console sessions) among SHA-256 hashes, with each key''s stored last use: revoked, expired, idle sessions and secrets past their rotation grace are absent, so they all get the same 401. Inlined into its callers (no SET clause): every name is schema-qualified.';
