-- functions/kiln.expire_batches.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.expire_batches.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.expire_batches(p_limit integer)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid;
  v_n int;
  v_done int := 0;
begin
  for v_id in
    select b.id from kiln_private.batches b
    where b.status = 'in_progress' and b.expires_at <= now() and not b.expired
    order by b.expires_at
    limit p_limit
  loop
    -- Its lines before its row, as a worker takes them (a line, then through
    -- kiln_private.tg_generations__batch its batch's row): the other order deadlocks with a line
    -- being started. One being started now is waited for, and then goes on as in flight.
    perform 1 from kiln_private.generations g
      where g.batch_id = v_id and g.status = 'pending' and g.started_at is null
      order by g.batch_line
      for update;
    perform 1 from kiln_private.batches b
      where b.id = v_id and b.status = 'in_progress' and not b.expired
      for update;
    continue when not found;
    -- Lines not started by the expiry end expired, uncharged; lines in flight finish.
    perform set_config('kiln.batch_bulk', 'on', true);
    with gone as (
      update kiln_private.generations g
        set status = 'failed', error = 'expired: the batch expired before this line started; nothing was charged', waiting = false,
            finished_at = now(), updated_at = now()
        where g.batch_id = v_id and g.status = 'pending' and g.started_at is null
        returning g.id)
    select count(*) into v_n from gone;
    perform set_config('kiln.batch_bulk', 'off', true);
    update kiln_private.batches set failed = failed + v_n, expired = true, in_queue = 0, updated_at = now() where id = v_id;
    perform kiln_private.finish_batch(v_id);
    v_done := v_done + 1;
  end loop;
  return v_done;
end;
$function$;
comment on function kiln.expire_batches(integer) is 'The worker''s sweep: up to p_limit batches past their expiresAt end their lines not yet started as failed (expired, uncharged); the batch is expired once its lines in flight end. Returns how many batches it expired.';
