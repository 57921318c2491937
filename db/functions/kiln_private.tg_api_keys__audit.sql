-- functions/kiln_private.tg_api_keys__audit.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_api_keys__audit.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_api_keys__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_scope uuid := coalesce(new.workspace_id, new.account_id);
  v_noun text := new.kind;
begin
  if tg_op = 'INSERT' then
    if new.kind = 'session' then
      -- A sign-in acts as the session it makes.
      perform set_config('kiln.actor', (coalesce(nullif(current_setting('kiln.actor', true), '')::jsonb, '{}')
        || jsonb_build_object('type', 'session', 'id', new.id))::text, true);
    end if;
    perform kiln_private.audit(v_scope, v_noun || '.created', v_noun, new.id::text,
      case when new.kind = 'key' then jsonb_build_object('name', new.name, 'prefix', new.display_prefix, 'scopes', new.scopes,
             'rpm', new.rpm, 'budgetMicros', new.budget_micros, 'expiresAt', new.expires_at, 'workspaceId', new.workspace_id,
             'requireEndUser', new.require_end_user)
           else jsonb_build_object('workspaceId', new.workspace_id, 'expiresAt', new.expires_at) end);
    return null;
  end if;
  if old.revoked_at is null and new.revoked_at is not null then
    perform kiln_private.audit(v_scope, case when new.kind = 'key' then 'key.revoked' else 'session.deleted' end, v_noun, new.id::text,
      jsonb_build_object('prefix', new.display_prefix));
  end if;
  if old.key_hash is distinct from new.key_hash then
    perform kiln_private.audit(v_scope, v_noun || '.rotated', v_noun, new.id::text,
      jsonb_build_object('prefix', new.display_prefix, 'previousPrefix', old.display_prefix,
        'previousValidUntil', (select max(g.expires_at) from kiln_private.api_key_grace g where g.key_id = new.id and g.key_hash = old.key_hash)));
  end if;
  if new.kind = 'key' and (old.scopes, old.rpm, old.budget_micros, old.expires_at, old.name, old.workspace_id, old.require_end_user)
       is distinct from (new.scopes, new.rpm, new.budget_micros, new.expires_at, new.name, new.workspace_id, new.require_end_user) then
    perform kiln_private.audit(v_scope, 'key.updated', 'key', new.id::text, jsonb_build_object(
      'scopes', new.scopes, 'rpm', new.rpm, 'budgetMicros', new.budget_micros, 'expiresAt', new.expires_at, 'name', new.name,
      'workspaceId', new.workspace_id, 'requireEndUser', new.require_end_user));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_api_keys__audit() is 'Trigger: key.created / rotated / revoked / updated and session.created / deleted (sign-in and sign-out) in the audit log.';
