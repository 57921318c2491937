-- functions/kiln.cancel_batch.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.cancel_batch.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.cancel_batch(p_account_id uuid, p_id uuid)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_b kiln_private.batches;
  v_n int;
  v_gen uuid;
begin
  select * into v_b from kiln_private.batches where id = p_id and account_id = p_account_id;
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  if v_b.status = 'in_progress' then
    -- Its lines before its row: a worker locks a line, then (kiln_private.tg_generations__batch)
    -- the batch's row; taking them in the other order deadlocks with a line being started or
    -- finished. One being started now is waited for, and then canceled as in flight.
    perform 1 from kiln_private.generations g
      where g.batch_id = p_id and g.status in ('pending', 'processing')
      order by g.batch_line
      for update;
    select * into v_b from kiln_private.batches where id = p_id for update;
  end if;
  if v_b.status <> 'in_progress' then
    return json_build_object('outcome', case when v_b.status = 'canceling' then 'canceled' else 'conflict' end, 'batch', kiln_private.batch_body(v_b));
  end if;
  update kiln_private.batches set status = 'canceling', updated_at = now() where id = p_id;
  -- Lines not started end canceled, uncharged (they reserved nothing), counted here at once.
  perform set_config('kiln.batch_bulk', 'on', true);
  with gone as (
    update kiln_private.generations g
      set status = 'failed', error = 'canceled', waiting = false, finished_at = now(), updated_at = now()
      where g.batch_id = p_id and g.status = 'pending' and g.started_at is null
      returning g.id)
  select count(*) into v_n from gone;
  perform set_config('kiln.batch_bulk', 'off', true);
  update kiln_private.batches set canceled = canceled + v_n, in_queue = 0, updated_at = now() where id = p_id;
  -- Their queued jobs find them ended. Lines in flight (or waiting for a retry) are canceled as
  -- POST /generations/{id}/cancel cancels them: reservation released, provider call aborted.
  for v_gen in select g.id from kiln_private.generations g where g.batch_id = p_id and g.status in ('pending', 'processing') loop
    perform kiln_private.cancel_generation(v_gen);
  end loop;
  perform kiln_private.finish_batch(p_id);
  select * into v_b from kiln_private.batches where id = p_id;
  return json_build_object('outcome', 'canceled', 'batch', kiln_private.batch_body(v_b));
end;
$function$;
comment on function kiln.cancel_batch(uuid,uuid) is 'POST /batches/{id}/cancel: the batch goes canceling; every line not started ends canceled, uncharged; lines in flight are canceled as a generation''s cancel would (reservation released, provider call aborted); once all have ended it is canceled (kiln_private.finish_batch). Outcome canceled (also when already canceling), conflict (it had ended) or missing.';
