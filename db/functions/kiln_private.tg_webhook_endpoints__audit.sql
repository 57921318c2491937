-- functions/kiln_private.tg_webhook_endpoints__audit.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_webhook_endpoints__audit.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_webhook_endpoints__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if tg_op = 'INSERT' then
    perform kiln_private.audit(new.scope_id, 'webhook.created', 'webhook', new.id::text,
      jsonb_build_object('url', new.url, 'events', new.events, 'description', new.description));
  elsif tg_op = 'DELETE' then
    perform kiln_private.audit(old.scope_id, 'webhook.deleted', 'webhook', old.id::text, jsonb_build_object('url', old.url));
  else
    if old.secret_enc is distinct from new.secret_enc then
      perform kiln_private.audit(new.scope_id, 'webhook.secret_rotated', 'webhook', new.id::text,
        jsonb_build_object('previousValidUntil', new.old_secret_until));
    end if;
    -- A disable by the delivery system (disabled_reason set) is the webhook's health, not a change by a person.
    if (old.url, old.events, old.description) is distinct from (new.url, new.events, new.description)
       or (old.enabled is distinct from new.enabled and new.disabled_reason is null) then
      perform kiln_private.audit(new.scope_id, 'webhook.updated', 'webhook', new.id::text,
        jsonb_build_object('url', new.url, 'events', new.events, 'description', new.description, 'enabled', new.enabled));
    end if;
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_webhook_endpoints__audit() is 'Trigger: webhook.created / updated / deleted / secret_rotated in the audit log (never the secret; an automatic disable is not an update).';
