-- functions/kiln_private.audit.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.audit.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.audit(p_scope_id uuid, p_action text, p_target_type text, p_target_id text, p_details jsonb DEFAULT '{}'::jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  -- The request that makes the change names itself in a transaction-local setting (set_config
  -- ..., true: safe behind a transaction pooler); without one, the change is an operator's.
  v_actor jsonb := nullif(current_setting('kiln.actor', true), '')::jsonb;
begin
  insert into kiln_private.audit_log (scope_id, actor_type, actor_id, action, target_type, target_id, ip, request_id, details)
  values (p_scope_id, coalesce(v_actor->>'type', 'operator'),
          coalesce(v_actor->>'id', session_user::text),
          p_action, p_target_type, p_target_id,
          case when v_actor->>'ip' ~ '^[0-9a-fA-F:.]{2,45}$' then (v_actor->>'ip')::inet end,
          left(v_actor->>'requestId', 200), coalesce(p_details, '{}'));
exception
  when invalid_text_representation then
    insert into kiln_private.audit_log (scope_id, actor_type, actor_id, action, target_type, target_id, details)
    values (p_scope_id, coalesce(v_actor->>'type', 'operator'), coalesce(v_actor->>'id', session_user::text),
            p_action, p_target_type, p_target_id, coalesce(p_details, '{}'));
end;
$function$;
comment on function kiln_private.audit(uuid,text,text,text,jsonb) is 'Appends one audit entry; the actor, IP and request id come from the transaction-local setting kiln.actor (JSON: type, id, ip, requestId) and default to the operator (the database user).';
