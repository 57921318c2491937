-- functions/kiln.end_batch_lines.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.end_batch_lines.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.end_batch_lines(p_id uuid)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_b kiln_private.batches;
  v_error text;
  v_n int;
  v_gen uuid;
begin
  select * into v_b from kiln_private.batches where id = p_id;
  if not found or v_b.status not in ('in_progress', 'canceling') then
    return 0;
  end if;
  if v_b.status = 'canceling' then
    v_error := 'canceled';
  elsif v_b.expired then
    v_error := 'expired: the batch expired before this line started; nothing was charged';
  else
    return 0;
  end if;
  -- Lines not started end at once, uncharged (they reserved nothing), counted here in one go.
  perform set_config('kiln.batch_bulk', 'on', true);
  with gone as (
    update kiln_private.generations g
      set status = 'failed', error = v_error, waiting = false, finished_at = now(), updated_at = now()
      where g.batch_id = p_id and g.status = 'pending' and g.started_at is null
      returning g.id)
  select count(*) into v_n from gone;
  perform set_config('kiln.batch_bulk', 'off', true);
  -- Their queued jobs find them ended. After a cancel, lines in flight (or waiting for a retry) are
  -- canceled as POST /generations/{id}/cancel cancels them; after an expiry they finish.
  if v_error = 'canceled' then
    for v_gen in select g.id from kiln_private.generations g where g.batch_id = p_id and g.status in ('pending', 'processing') loop
      perform kiln_private.cancel_generation(v_gen);
    end loop;
  end if;
  update kiln_private.batches
    set canceled = canceled + case when v_error = 'canceled' then v_n else 0 end,
        failed = failed + case when v_error = 'canceled' then 0 else v_n end,
        in_queue = 0, updated_at = now()
    where id = p_id;
  perform kiln_private.finish_batch(p_id);
  return v_n;
end;
$function$;
comment on function kiln.end_batch_lines(uuid) is 'Ends the lines of a canceling or expired batch: those not started as canceled (or expired), uncharged, counted at once; after a cancel, those in flight as a generation''s cancel would. Locks lines before the batch row, as workers do. Idempotent; returns how many lines it ended in bulk.';
