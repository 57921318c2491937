-- functions/kiln.send_webhook_test.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.send_webhook_test.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.send_webhook_test(p_scope_id uuid, p_endpoint_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_enabled boolean;
begin
  select e.enabled into v_enabled from kiln_private.webhook_endpoints e where e.id = p_endpoint_id and e.scope_id = p_scope_id;
  if not found then return false; end if;
  if not v_enabled then
    raise exception 'The endpoint is disabled: enable it (PATCH enabled: true) before sending a test event.' using errcode = 'KT001';
  end if;
  perform kiln_private.emit_event(p_scope_id, 'webhook.test', null, json_build_object('endpointId', p_endpoint_id), p_endpoint_id);
  return true;
end;
$function$;
comment on function kiln.send_webhook_test(uuid,uuid) is 'Emits a webhook.test event delivered to this endpoint only. False when it is not the scope''s; KT001 when it is disabled.';
