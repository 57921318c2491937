-- functions/kiln.redeliver_webhook_message.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.redeliver_webhook_message.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.redeliver_webhook_message(p_scope_id uuid, p_endpoint_id uuid, p_event_id bigint)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid;
begin
  select d.id into v_id from kiln_private.webhook_deliveries d join kiln_private.webhook_endpoints e on e.id = d.endpoint_id
    where d.event_id = p_event_id and d.endpoint_id = p_endpoint_id and e.scope_id = p_scope_id
    order by d.created_at desc, d.id desc
    limit 1
    for update of d;
  if not found then return false; end if;
  perform kiln_private.queue_delivery(v_id);
  return true;
end;
$function$;
comment on function kiln.redeliver_webhook_message(uuid,uuid,bigint) is 'Sends the message of an event to an endpoint again (same webhook-id msg_<event id> and body), found by the event''s id. False when the endpoint has no delivery of it or is not the scope''s.';
