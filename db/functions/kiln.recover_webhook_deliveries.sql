-- functions/kiln.recover_webhook_deliveries.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.recover_webhook_deliveries.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.recover_webhook_deliveries(p_scope_id uuid, p_endpoint_id uuid, p_since timestamp with time zone)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid;
  v_n int := 0;
begin
  if not exists (select 1 from kiln_private.webhook_endpoints e where e.id = p_endpoint_id and e.scope_id = p_scope_id) then
    return null;
  end if;
  for v_id in select d.id from kiln_private.webhook_deliveries d
      where d.endpoint_id = p_endpoint_id and d.status = 'failed' and d.failed_at >= p_since
      order by d.created_at for update loop
    perform kiln_private.queue_delivery(v_id);
    v_n := v_n + 1;
  end loop;
  return v_n;
end;
$function$;
comment on function kiln.recover_webhook_deliveries(uuid,uuid,timestamp with time zone) is 'Sends again every delivery of the endpoint that failed since p_since. How many; null when the endpoint is not the scope''s.';
