-- functions/kiln_private.finish_batch.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.finish_batch.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.finish_batch(p_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_b kiln_private.batches;
begin
  update kiln_private.batches b
    set status = case when b.status = 'canceling' then 'canceled' when b.expired then 'expired' else 'completed' end,
        completed_at = now(), in_queue = 0, updated_at = now()
    where b.id = p_id and b.status in ('in_progress', 'canceling') and b.completed + b.failed + b.canceled >= b.total
    returning * into v_b;
  if found then
    perform kiln_private.emit_event(v_b.scope_id, 'batch.' || v_b.status, v_b.id, kiln_private.batch_body(v_b));
  end if;
  -- Watchers of the batch (GET /batches/{id}/events) read it again.
  perform pg_notify('kiln_status', json_build_object('k', 'batch', 'id', p_id)::text);
end;
$function$;
comment on function kiln_private.finish_batch(uuid) is 'After a batch''s counts changed: when every line has ended, the batch ends (completed, canceled after a cancel, expired after its expiry) and emits batch.completed / batch.canceled / batch.expired; notifies its event streams either way.';
