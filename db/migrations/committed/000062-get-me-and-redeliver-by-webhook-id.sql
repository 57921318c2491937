--! Previous: sha1:da5a484a62274b347b4c2b8644fed8fd57304a85
--! Hash: sha1:e503981fcb1022d2d0aa20271408de6ac093ffe3
--! Message: Clients: GET /me (kiln.get_me) and redelivery by webhook-id (kiln.redeliver_webhook_message)

--! split: 1-current.sql
-- Enter migration here

--! split: 4-contract.sql
-- A message in an endpoint's delivery log is named by its webhook-id (`msg_<event id>`,
-- src/events/ids.ts; docs/webhooks.md): redeliver finds the endpoint's delivery of that event.
create or replace function kiln.redeliver_webhook_message(p_scope_id uuid, p_endpoint_id uuid, p_event_id bigint)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function kiln.redeliver_webhook_message(uuid, uuid, bigint) is 'Sends the message of an event to an endpoint again (same webhook-id msg_<event id> and body), found by the event''s id. False when the endpoint has no delivery of it or is not the scope''s.';

-- GET /me (docs/api.md, "Who am I"): the account behind an authorized credential.
create or replace function kiln.get_me(p_account_id uuid)
returns json
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select json_build_object('email', a.email, 'admin', a.is_admin or a.admin_by_group)
  from kiln_private.accounts a where a.id = p_account_id;
$$;
comment on function kiln.get_me(uuid) is 'GET /me: the email of an account and whether its user is an admin (set by an operator or by the SSO admin group); null when there is no such account.';
