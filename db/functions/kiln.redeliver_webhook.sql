-- functions/kiln.redeliver_webhook.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.redeliver_webhook.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.redeliver_webhook(p_scope_id uuid, p_endpoint_id uuid, p_delivery_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform 1 from kiln_private.webhook_deliveries d join kiln_private.webhook_endpoints e on e.id = d.endpoint_id
    where d.id = p_delivery_id and d.endpoint_id = p_endpoint_id and e.scope_id = p_scope_id
    for update of d;
  if not found then return false; end if;
  perform kiln_private.queue_delivery(p_delivery_id);
  return true;
end;
$function$;
comment on function kiln.redeliver_webhook(uuid,uuid,uuid) is 'Sends a delivery''s message again (same webhook-id and body). False when it is not the scope''s.';
