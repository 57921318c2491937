-- functions/kiln_private.tg_generations__batch.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_generations__batch.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_generations__batch()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- A bulk end (a cancel, an expiry) counts its lines itself.
  if current_setting('kiln.batch_bulk', true) = 'on' then
    return null;
  end if;
  if old.status = 'pending' and new.status = 'processing' then
    update kiln_private.batches
      set in_queue = greatest(in_queue - 1, 0), started_at = coalesce(started_at, now()), updated_at = now()
      where id = new.batch_id;
  elsif new.status in ('completed', 'failed') then
    update kiln_private.batches b
      set completed = b.completed + (new.status = 'completed')::int,
          canceled = b.canceled + (new.status = 'failed' and new.error = 'canceled')::int,
          failed = b.failed + (new.status = 'failed' and new.error is distinct from 'canceled')::int,
          in_queue = greatest(b.in_queue - (old.status = 'pending' and new.batch_line <= b.next_line)::int, 0),
          spent_micros = b.spent_micros + case when new.status = 'completed' then coalesce(new.cost_micros, 0) else 0 end,
          updated_at = now()
      where b.id = new.batch_id;
    perform kiln_private.finish_batch(new.batch_id);
    -- Its slot is free: the next lines (of whichever scope's turn it is) are queued, a group at a time.
    perform kiln_private.dispatch_batches(10);
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_generations__batch() is 'Trigger: a batch line that starts leaves the batch''s queue; one that ends is counted (completed, failed, canceled; its cost in spent_micros), may end the batch (kiln_private.finish_batch), and lets the next line be queued (kiln_private.dispatch_batches). Skipped while kiln.batch_bulk is on (a cancel or an expiry counts its lines itself).';
