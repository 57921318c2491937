-- functions/kiln.start_batch_lines.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.start_batch_lines.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.start_batch_lines(p_batch_id uuid, p_from integer, p_to integer, p_worker_id text, p_job_id bigint, p_stale_seconds integer, p_wait_ms integer, p_max_crashes integer DEFAULT 10, p_takeover boolean DEFAULT false)
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
  v_ids uuid[] := '{}';
  v_crash boolean[] := '{}';
  v_rids uuid[];
  v_rcodes text[];
  v_rmsgs text[];
  v_i int;
  v_cids uuid[] := '{}';
  v_gids uuid[] := '{}';
  v_out json;
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
  -- With p_takeover (a job's first call), also the lines this job had started beyond its own
  -- group (kiln.complete_batch_lines hands a running job further groups): after a crash its next
  -- run takes them over.
  for v_gen in
    select * from kiln_private.generations g
      where g.id in (
        select x.id from kiln_private.generations x
          where x.batch_id = p_batch_id and x.batch_line between p_from and p_to
        union
        select x.id from kiln_private.generations x
          where p_takeover and x.account_id = v_b.account_id and x.status = 'processing'
            and x.batch_id = p_batch_id and x.job_id = p_job_id)
      order by g.batch_line
      for update
  loop
    continue when v_gen.status in ('completed', 'failed');
    -- A line with a job of its own (a retry, a wait for a slot) is run by that job.
    continue when exists (select 1 from graphile_worker.jobs j where j.key = v_gen.id::text);
    v_crashed := false;
    if v_gen.status = 'processing' then
      if v_gen.worker_id = p_worker_id and v_gen.job_id = p_job_id then
        null; -- the same job again (its task failed and is retried): carry on
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
    v_ids := v_ids || v_gen.id;
    v_crash := v_crash || v_crashed;
  end loop;

  if cardinality(v_ids) > 0 then
    -- Their worst cases (priced when the batch was created, from the entries they run with) are
    -- reserved, once, in one call (on each line's end user's cap too when it has one), the charges
    -- naming their batch and carrying the lines' metadata; a budget that cannot cover a line fails
    -- it below, uncharged, the lines before it in batch order reserved first.
    with todo as (
      select g.*, row_number() over (order by g.batch_line) as i
        from kiln_private.generations g
        where g.id = any (v_ids) and g.charge_id is null),
    r as (
      select * from kiln_private.reserve_budgets(
        array(select t.account_id from todo t order by t.i), array(select t.workspace_id from todo t order by t.i),
        array(select t.key_id from todo t order by t.i), array(select t.model_id from todo t order by t.i),
        array(select t.origin from todo t order by t.i), array(select t.reserved_micros from todo t order by t.i),
        array(select t.id from todo t order by t.i), null, null, array(select t.end_user from todo t order by t.i),
        array(select t.batch_id from todo t order by t.i), array(select t.metadata from todo t order by t.i)))
    select coalesce(array_agg(t.id order by t.i) filter (where r.charge_id is not null), '{}'),
           coalesce(array_agg(r.charge_id order by t.i) filter (where r.charge_id is not null), '{}'),
           coalesce(array_agg(t.id order by t.i) filter (where r.charge_id is null), '{}'),
           coalesce(array_agg(r.error_code order by t.i) filter (where r.charge_id is null), '{}'),
           coalesce(array_agg(r.error_message order by t.i) filter (where r.charge_id is null), '{}')
      into v_gids, v_cids, v_rids, v_rcodes, v_rmsgs
      from r join todo t on t.i = r.ord;
    -- The lines start, with their charges, in one statement (a refused line too: it fails below,
    -- as kiln.fail_generation ends a started line).
    update kiln_private.generations g
      set status = 'processing', waiting = false,
          attempts = g.attempts + case when c.crashed then 0 else 1 end,
          crashes = g.crashes + c.crashed::int, crash_streak = g.crash_streak + c.crashed::int,
          worker_id = p_worker_id, job_id = p_job_id, charge_id = coalesce(g.charge_id, r.charge_id),
          started_at = coalesce(g.started_at, now()), updated_at = now()
      from unnest(v_ids, v_crash) as c(id, crashed)
      left join unnest(v_gids, v_cids) as r(id, charge_id) on r.id = c.id
      where g.id = c.id;
    for v_i in 1 .. cardinality(v_rids) loop
      if v_rcodes[v_i] not in ('KQ001', 'KP001') then
        raise exception '%', v_rmsgs[v_i] using errcode = v_rcodes[v_i];
      end if;
      perform kiln.fail_generation(v_rids[v_i], case when v_rcodes[v_i] = 'KQ001' then 'insufficient_quota: ' else 'payment_required: ' end
                                                || v_rmsgs[v_i]);
      v_failed := v_failed + 1;
    end loop;
    select json_agg(json_build_object(
             'id', g.id, 'attempt', g.attempts, 'max_attempts', g.max_attempts, 'account_id', g.account_id,
             'request', kiln_private.batch_line_request(g.request, v_b.models),
             'reserved_micros', g.reserved_micros) order by g.batch_line)
      into v_out
      from kiln_private.generations g
      where g.id = any (v_ids) and g.status = 'processing';
  end if;
  perform kiln_private.count_batch_lines(p_batch_id, v_left, v_started, 0, v_failed, v_canceled, 0);
  perform set_config('kiln.batch_bulk', 'off', true);
  return json_build_object('lines', coalesce(v_out, '[]'::json));
end;
$function$;
comment on function kiln.start_batch_lines(uuid,integer,integer,text,bigint,integer,integer,integer,boolean) is 'A batch__run job''s start of its group of lines (batch_line p_from to p_to) in one call: each pending line takes one of the account''s parallel slots (or waits for one with a generation__run job of its own), and the lines started reserve their worst cases, once, in one kiln_private.reserve_budgets call, on their end users'' caps too when they have one (a budget that cannot cover a line fails it insufficient_quota or payment_required, uncharged); a line whose worker died is taken over (a crash, not an attempt; p_max_crashes in a row fail it), and with p_takeover (a job''s first call) so are the lines this job had started beyond its group; lines ended, run by a live worker or by a job of their own are left. Lines of a canceled or expired batch end. Returns the lines to run (id, attempt, max_attempts, account_id, request with its catalog entries, reserved_micros); counts the group once.';
