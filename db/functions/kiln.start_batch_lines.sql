-- functions/kiln.start_batch_lines.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.start_batch_lines.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.start_batch_lines(p_batch_id uuid, p_from integer, p_to integer, p_worker_id text, p_job_id bigint, p_stale_seconds integer, p_wait_ms integer, p_max_crashes integer DEFAULT 10)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_b kiln_private.batches;
  v_gen kiln_private.generations;
  v_account kiln_private.accounts;
  v_free int;
  v_crashed boolean;
  v_charge kiln_private.charges;
  v_out json[] := '{}';
  v_error text;
  v_left int := 0;
  v_started boolean := false;
  v_failed int := 0;
  v_canceled int := 0;
  v_locked boolean := false;
begin
  select * into v_b from kiln_private.batches where id = p_batch_id;
  if not found then
    return json_build_object('lines', '[]'::json);
  end if;
  -- Counted below at once (kiln_private.count_batch_lines), not line by line by the trigger.
  perform set_config('kiln.batch_bulk', 'on', true);
  -- Lines are locked before the batch row, as every worker's transaction does (no lock cycle).
  for v_gen in
    select * from kiln_private.generations g
      where g.batch_id = p_batch_id and g.batch_line between p_from and p_to
      order by g.batch_line
      for update
  loop
    continue when v_gen.status in ('completed', 'failed');
    -- A line with a job of its own (a retry, a wait for a slot) is run by that job.
    continue when exists (select 1 from graphile_worker.jobs j where j.key = v_gen.id::text);
    v_crashed := false;
    if v_gen.status = 'processing' then
      if v_gen.worker_id = p_worker_id and v_gen.job_id = p_job_id then
        null; -- the same job again (cannot normally happen): carry on
      elsif kiln_private.lease_held(v_gen.worker_id, v_gen.job_id, p_stale_seconds) then
        continue; -- a live worker runs it (a retry's own job): never twice
      else
        -- Its worker died during the execution: take it over, a crash and not an attempt (as
        -- kiln.start_generation does); p_max_crashes in a row fail it.
        v_crashed := true;
        if v_gen.crash_streak + 1 >= p_max_crashes then
          update kiln_private.generations
            set crashes = crashes + 1, crash_streak = crash_streak + 1, attempts = greatest(attempts - 1, 0), updated_at = now()
            where id = v_gen.id;
          perform kiln.fail_generation(v_gen.id, format(
            'the worker running this generation stopped during it %s times in a row (it crashed or was killed), so it was not run again: '
            'the request may be what stops the worker. Nothing was charged.', v_gen.crash_streak + 1));
          v_failed := v_failed + 1;
          continue;
        end if;
      end if;
    else
      v_left := v_left + 1;
      -- A line of a batch canceled or expired meanwhile never starts (docs/api.md, "Batches").
      if v_b.status <> 'in_progress' or v_b.expired then
        perform kiln_private.end_generation(v_gen.id, case when v_b.status <> 'in_progress' then 'canceled'
          else 'expired: the batch expired before this line started; nothing was charged' end);
        if v_b.status <> 'in_progress' then v_canceled := v_canceled + 1; else v_failed := v_failed + 1; end if;
        continue;
      end if;
      -- One of the account's parallel slots, or a wait for one. Serialised per account.
      if not v_locked then
        perform pg_advisory_xact_lock(hashtextextended('kiln.slots:' || v_b.account_id::text, 0));
        select * into v_account from kiln_private.accounts where id = v_b.account_id;
        select coalesce(v_account.parallel_slots, t.parallel_slots) - kiln_private.busy_slots(v_b.account_id) into v_free
          from kiln_private.tiers t where t.tier = v_account.tier;
        v_locked := true;
      end if;
      if v_account.tier = 'blocked' then
        perform kiln.fail_generation(v_gen.id, 'this account cannot run generations');
        v_failed := v_failed + 1;
        continue;
      end if;
      if coalesce(v_free, 0) <= 0 then
        -- Never rejected: it waits pending with a job of its own (kiln.start_generation's wait).
        v_left := v_left - 1;
        update kiln_private.generations set waiting = true, updated_at = now() where id = v_gen.id;
        perform graphile_worker.add_job('generation__run', json_build_object('id', v_gen.id),
          run_at => now() + make_interval(secs => p_wait_ms / 1000.0), job_key => v_gen.id::text, priority => 10,
          max_attempts => kiln_private.generation_job_attempts());
        continue;
      end if;
      v_free := v_free - 1;
      v_started := true;
    end if;
    update kiln_private.generations
      set status = 'processing', waiting = false,
          attempts = attempts + case when v_crashed then 0 else 1 end,
          crashes = crashes + v_crashed::int, crash_streak = crash_streak + v_crashed::int,
          worker_id = p_worker_id, job_id = p_job_id,
          started_at = coalesce(started_at, now()), updated_at = now()
      where id = v_gen.id
      returning * into v_gen;
    -- Its worst case (priced when the batch was created, from the entries it runs with) is
    -- reserved now, once; a budget that cannot cover it fails the line, uncharged.
    if v_gen.charge_id is null then
      begin
        v_charge := kiln.reserve_budget(v_gen.account_id, v_gen.workspace_id, v_gen.key_id, v_gen.model_id, v_gen.origin,
                                        v_gen.reserved_micros, v_gen.id, null, null, v_gen.end_user);
      exception when sqlstate 'KQ001' or sqlstate 'KP001' then
        v_error := case when sqlstate = 'KQ001' then 'insufficient_quota: ' else 'payment_required: ' end || sqlerrm;
        perform kiln.fail_generation(v_gen.id, v_error);
        v_failed := v_failed + 1;
        continue;
      end;
      -- The charge names its batch and carries the line's metadata (its end user, held on the end
      -- user's cap when it has one, came with the reservation: kiln.reserve_generation).
      update kiln_private.charges
        set batch_id = v_gen.batch_id, metadata = v_gen.metadata
        where id = v_charge.id;
      update kiln_private.generations
        set charge_id = v_charge.id, reserved_micros = v_charge.reserved_micros
        where id = v_gen.id
        returning * into v_gen;
    end if;
    v_out := v_out || json_build_object(
      'id', v_gen.id, 'attempt', v_gen.attempts, 'max_attempts', v_gen.max_attempts, 'account_id', v_gen.account_id,
      'request', kiln_private.batch_line_request(v_gen.request, v_b.models),
      'reserved_micros', v_gen.reserved_micros);
  end loop;
  perform kiln_private.count_batch_lines(p_batch_id, v_left, v_started, 0, v_failed, v_canceled, 0);
  perform set_config('kiln.batch_bulk', 'off', true);
  return json_build_object('lines', to_json(v_out));
end;
$function$;
comment on function kiln.start_batch_lines(uuid,integer,integer,text,bigint,integer,integer,integer) is 'A batch__run job''s start of its group of lines (batch_line p_from to p_to) in one call: each pending line takes one of the account''s parallel slots (or waits for one with a generation__run job of its own) and reserves its worst case, once, on its end user''s cap too when it has one (a budget that cannot cover it fails it insufficient_quota or payment_required, uncharged); a line whose worker died is taken over (a crash, not an attempt; p_max_crashes in a row fail it); lines ended, run by a live worker or by a job of their own are left. Lines of a canceled or expired batch end. Returns the lines to run (id, attempt, max_attempts, account_id, request with its catalog entries, reserved_micros); counts the group once.';
