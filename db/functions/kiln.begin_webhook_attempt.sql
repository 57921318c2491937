-- functions/kiln.begin_webhook_attempt.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.begin_webhook_attempt.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.begin_webhook_attempt(p_delivery_id uuid, p_round integer, p_tries integer)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_d kiln_private.webhook_deliveries;
  v_e kiln_private.webhook_endpoints;
  v_ev kiln_private.events;
begin
  select * into v_d from kiln_private.webhook_deliveries where id = p_delivery_id;
  -- Delivered, failed, deleted, or a job of an earlier round or try: nothing to do.
  if not found or v_d.status <> 'pending' or v_d.round <> p_round or v_d.tries <> p_tries then return null; end if;
  select * into v_e from kiln_private.webhook_endpoints where id = v_d.endpoint_id;
  if not v_e.enabled then
    update kiln_private.webhook_deliveries set status = 'failed', failed_at = clock_timestamp(), next_attempt_at = null,
      last_error = 'endpoint disabled' where id = p_delivery_id;
    return null;
  end if;
  select * into v_ev from kiln_private.events where id = v_d.event_id;
  return json_build_object(
    'id', v_d.id, 'url', v_e.url, 'endpointId', v_e.id,
    'secret', encode(v_e.secret_enc, 'base64'),
    'oldSecret', case when v_e.old_secret_until > now() then encode(v_e.old_secret_enc, 'base64') end,
    'event', json_build_object('id', v_ev.id, 'type', v_ev.type,
      'occurredAt', to_char(v_ev.occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'data', v_ev.data, 'body', v_ev.body));
end;
$function$;
comment on function kiln.begin_webhook_attempt(uuid,integer,integer) is 'What an attempt needs (URL, encrypted secrets, the event and its frozen body), or null when the job is stale (delivery settled, another round or try) or the endpoint is gone; a disabled endpoint fails the delivery.';
