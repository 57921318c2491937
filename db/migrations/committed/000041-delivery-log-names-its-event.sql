--! Previous: sha1:d81f83dbfa249d04308ee4d5d147cd31e536830f
--! Hash: sha1:b9880f579cedb2ca4a421818e1919f85834757d1
--! Message: The delivery log names each delivery's event (webhook-id msg_<event id>)

--! split: 1-current.sql
-- A delivery's message is identified by its event (webhook-id `msg_<event id>`, src/events/ids.ts):
-- the delivery log names each delivery's event so the API can show that webhook-id beside the
-- delivery's own id.
create or replace function kiln.list_webhook_deliveries(p_scope_id uuid, p_endpoint_id uuid, p_limit integer, p_before_at timestamptz, p_before_id uuid)
returns json
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select case when not exists (select 1 from kiln_private.webhook_endpoints e where e.id = p_endpoint_id and e.scope_id = p_scope_id) then null
  else (select coalesce(json_agg(json_build_object(
      'id', d.id, 'eventId', ev.id::text, 'event', ev.type, 'status', d.status, 'attempts', d.attempts,
      'lastStatusCode', d.last_status_code, 'lastError', d.last_error,
      'createdAt', to_char(d.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
      'deliveredAt', to_char(d.delivered_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'nextAttemptAt', case when d.status = 'pending' then to_char(d.next_attempt_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') end)
      order by d.created_at desc, d.id desc), '[]')
    from (select * from kiln_private.webhook_deliveries d
          where d.endpoint_id = p_endpoint_id
            and (p_before_at is null or (d.created_at, d.id) < (p_before_at, p_before_id))
          order by d.created_at desc, d.id desc limit p_limit) d
    join kiln_private.events ev on ev.id = d.event_id) end;
$$;
comment on function kiln.list_webhook_deliveries(uuid, uuid, integer, timestamptz, uuid) is 'A page of an endpoint''s deliveries, newest first, before a (created_at, id) cursor, each with its event''s id (the message''s webhook-id is derived from it); null when the endpoint is not the scope''s.';
comment on table kiln_private.webhook_deliveries is 'One message per (event, endpoint): status, attempts and the next attempt. Its webhook-id is the event''s (msg_<event id>), the same at every endpoint.';
