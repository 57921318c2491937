-- functions/kiln_private.count_batch_lines.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.count_batch_lines.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.count_batch_lines(p_batch_id uuid, p_left_queue integer, p_started boolean, p_completed integer, p_failed integer, p_canceled integer, p_spent_micros bigint)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- What kiln_private.tg_generations__batch does line by line, once for a group of lines.
  update kiln_private.batches b
    set in_queue = greatest(b.in_queue - p_left_queue, 0),
        started_at = case when p_started then coalesce(b.started_at, now()) else b.started_at end,
        completed = b.completed + p_completed,
        failed = b.failed + p_failed,
        canceled = b.canceled + p_canceled,
        spent_micros = b.spent_micros + p_spent_micros,
        updated_at = now()
    where b.id = p_batch_id;
  if p_completed + p_failed + p_canceled > 0 then
    perform kiln_private.finish_batch(p_batch_id);
    -- Their slots are free: the next lines (of whichever scope's turn it is) are queued.
    perform kiln_private.dispatch_batches(greatest(p_completed + p_failed + p_canceled, 10));
  end if;
end;
$function$;
comment on function kiln_private.count_batch_lines(uuid,integer,boolean,integer,integer,integer,bigint) is 'Counts a group of a batch''s lines at once (kiln.start_batch_lines, kiln.complete_batch_lines, with kiln.batch_bulk on): lines that left its queue, whether one started, those that ended (completed, failed, canceled) and what the completed ones cost; when any ended, may end the batch (kiln_private.finish_batch) and queues the next lines (kiln_private.dispatch_batches).';
