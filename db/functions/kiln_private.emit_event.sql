-- functions/kiln_private.emit_event.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.emit_event.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.emit_event(p_scope_id uuid, p_type text, p_subject_id uuid, p_data json, p_endpoint_id uuid DEFAULT NULL::uuid)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id bigint;
  v_jobs graphile_worker.job_spec[];
begin
  insert into kiln_private.events (scope_id, type, subject_id, data)
    values (p_scope_id, p_type, p_subject_id, p_data)
    returning id into v_id;
  -- One delivery and one job per matching endpoint, in this transaction: never lost.
  with d as (
    insert into kiln_private.webhook_deliveries (endpoint_id, event_id)
    select e.id, v_id from kiln_private.webhook_endpoints e
    where e.scope_id = p_scope_id and e.enabled
      and (p_endpoint_id is null or e.id = p_endpoint_id)
      and (e.events is null or p_type = any (e.events))
    returning id, endpoint_id)
  select array_agg(kiln_private.webhook_job(d.id, d.endpoint_id, 0, 0)) into v_jobs from d;
  if v_jobs is not null then
    perform graphile_worker.add_jobs(v_jobs);
  end if;
  -- GET /events streams wake up and read the table.
  perform pg_notify('kiln_status', json_build_object('k', 'events', 'id', p_scope_id)::text);
  return v_id;
end;
$function$;
comment on function kiln_private.emit_event(uuid,text,uuid,json,uuid) is 'Writes one event to the outbox and, in the same transaction, a delivery plus a webhook__deliver job for each enabled endpoint of the scope whose filter matches (only p_endpoint_id when given); notifies GET /events streams. Returns the event id.';
