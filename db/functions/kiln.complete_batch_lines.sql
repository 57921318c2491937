-- functions/kiln.complete_batch_lines.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.complete_batch_lines.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.complete_batch_lines(p_batch_id uuid, p_ids uuid[], p_results jsonb, p_costs bigint[], p_provider_request_ids text[], p_model_ids text[], p_worker_id text DEFAULT NULL::text, p_job_id bigint DEFAULT NULL::bigint, p_stale_seconds integer DEFAULT NULL::integer, p_wait_ms integer DEFAULT NULL::integer, p_max_crashes integer DEFAULT 10)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gids uuid[] := '{}';
  v_cids uuid[];
  v_amounts bigint[];
  v_models text[];
  v_done uuid[];
  v_lids uuid[];
  v_costs bigint[];
  v_account uuid;
  v_applied json;
  v_completed int := 0;
  v_spent bigint := 0;
  v_take record;
  v_lines json := '[]';
begin
  if jsonb_array_length(p_results) <> coalesce(cardinality(p_ids), 0) or coalesce(cardinality(p_costs), 0) <> coalesce(cardinality(p_ids), 0) then
    raise exception 'one result and cost per line' using errcode = '22023';
  end if;
  -- Counted below at once, not line by line by the trigger.
  perform set_config('kiln.batch_bulk', 'on', true);
  -- 1. The lines, locked in batch order (as kiln.start_batch_lines locks them); those to complete
  --    are this batch's, not ended, with a reservation (as kiln.complete_generation: idempotent,
  --    a duplicated or retried completion finds the first in place).
  select coalesce(array_agg(x.id order by x.batch_line), '{}') into v_gids
    from (select g.id, g.batch_line, g.status, g.charge_id from kiln_private.generations g
            where g.id = any (p_ids) and g.batch_id = p_batch_id
            order by g.batch_line
            for update) x
    where x.status not in ('completed', 'failed') and x.charge_id is not null;
  if cardinality(v_gids) > 0 then
    -- 2. Their charges, locked: each line costs the actual cost clamped to its reservation (as
    --    kiln.settle_charge), or what its charge settled at when it is not reserved any more.
    select array_agg(c.gid order by c.id), array_agg(c.cost order by c.id),
           array_agg(c.id order by c.id) filter (where c.status = 'reserved'),
           array_agg(c.cost order by c.id) filter (where c.status = 'reserved'),
           array_agg(c.model order by c.id) filter (where c.status = 'reserved')
      into v_lids, v_costs, v_cids, v_amounts, v_models
      from (select ch.id, ch.status, p.id as gid, p.model,
                   case when ch.status = 'reserved' then least(greatest(coalesce(p.cost, 0), 0), ch.reserved_micros)
                        else coalesce(ch.settled_micros, 0) end as cost
              from (select distinct on (u.id) u.id, u.cost, u.model
                      from unnest(p_ids, p_costs, p_model_ids) with ordinality as u(id, cost, model, i)
                      where u.id = any (v_gids)
                      order by u.id, u.i) p
              join kiln_private.generations g on g.id = p.id
              join kiln_private.charges ch on ch.id = g.charge_id
              order by ch.id
              for update of ch) c;
    -- 3. The lines complete with their results and costs (rows of this job's own: done before the
    --    locks other jobs of the account wait for).
    with done as (
      update kiln_private.generations g
        set status = 'completed',
            result = p_results -> (p.i::int - 1),
            cost_micros = l.cost,
            provider_request_id = left(p.prid, 200),
            waiting = false,
            finished_at = now(),
            updated_at = now()
        from (select distinct on (u.id) u.id, u.prid, u.i
                from unnest(p_ids, p_provider_request_ids) with ordinality as u(id, prid, i)
                where u.id = any (v_gids)
                order by u.id, u.i) p,
             unnest(v_lids, v_costs) as l(id, cost)
        where g.id = p.id and l.id = p.id
        returning g.id, g.cost_micros, g.account_id)
    select array_agg(d.id), count(*)::int, coalesce(sum(d.cost_micros), 0)::bigint, min(d.account_id::text)::uuid
      into v_done, v_completed, v_spent, v_account
      from done d;
  end if;
  if p_worker_id is not null then
    -- The job goes on, so this call starts lines too: the account's slot lock is taken before the
    -- pool's row that the settlement below locks, as a start takes it before its reservation
    -- (kiln.start_batch_lines): no lock cycle with another job's start.
    perform pg_advisory_xact_lock(hashtextextended('kiln.slots:' || b.account_id::text, 0))
      from kiln_private.batches b where b.id = p_batch_id;
  end if;
  if v_completed > 0 then
    if v_cids is not null then
      -- 4. The held amounts become settled: one update per pool, key and end user's cap (in that
      --    order, as reservations take them), then the charges in one statement; a fallback that
      --    produced the output is the model the ledger names.
      update kiln_private.budget_periods b
        set held_micros = b.held_micros - s.reserved, settled_micros = b.settled_micros + s.amount
        from (select ch.pool_id, ch.period_start, sum(ch.reserved_micros)::bigint as reserved, sum(a.amount)::bigint as amount
                from unnest(v_cids, v_amounts) as a(id, amount) join kiln_private.charges ch on ch.id = a.id
                group by 1, 2) s
        where b.pool_id = s.pool_id and b.period_start = s.period_start;
      update kiln_private.key_budget_periods b
        set held_micros = b.held_micros - s.reserved, settled_micros = b.settled_micros + s.amount
        from (select ch.key_id, ch.period_start, sum(ch.reserved_micros)::bigint as reserved, sum(a.amount)::bigint as amount
                from unnest(v_cids, v_amounts) as a(id, amount) join kiln_private.charges ch on ch.id = a.id
                where ch.key_pool
                group by 1, 2) s
        where b.key_id = s.key_id and b.period_start = s.period_start;
      perform 1 from kiln_private.end_user_budget_periods b
        where (b.pool_id, b.end_user, b.period_start) in (
          select ch.pool_id, ch.end_user, ch.end_user_period from kiln_private.charges ch
            where ch.id = any (v_cids) and ch.end_user_period is not null)
        order by b.pool_id, b.end_user, b.period_start
        for update;
      update kiln_private.end_user_budget_periods b
        set held_micros = b.held_micros - s.reserved, settled_micros = b.settled_micros + s.amount
        from (select ch.pool_id, ch.end_user, ch.end_user_period, sum(ch.reserved_micros)::bigint as reserved, sum(a.amount)::bigint as amount
                from unnest(v_cids, v_amounts) as a(id, amount) join kiln_private.charges ch on ch.id = a.id
                where ch.end_user_period is not null
                group by 1, 2, 3) s
        where b.pool_id = s.pool_id and b.end_user = s.end_user and b.period_start = s.end_user_period;
      update kiln_private.charges ch
        set status = 'settled', settled_micros = a.amount, finished_at = now(), model_id = coalesce(a.model, ch.model_id)
        from unnest(v_cids, v_amounts, v_models) as a(id, amount, model)
        where ch.id = a.id;
    end if;
    -- Their slots are free: the account's oldest generation waiting for one runs now.
    perform kiln_private.nudge_waiting_generation(v_account);
  end if;
  select coalesce(json_agg(u.id = any (coalesce(v_done, '{}')) and u.first order by u.i), '[]'::json) into v_applied
    from (select x.id, x.i, row_number() over (partition by x.id order by x.i) = 1 as first
            from unnest(p_ids) with ordinality as x(id, i)) u;

  if p_worker_id is null then
    perform kiln_private.count_batch_lines(p_batch_id, 0, false, v_completed, 0, 0, v_spent);
  else
    -- The job goes on: counted as kiln_private.count_batch_lines counts, then the next lines are
    -- dispatched, and the first group of this batch whose turn it is (kiln_private.dispatch_batch_lines)
    -- is started for this job here instead of queued.
    update kiln_private.batches b
      set completed = b.completed + v_completed, spent_micros = b.spent_micros + v_spent, updated_at = now()
      where b.id = p_batch_id;
    if v_completed > 0 then
      perform kiln_private.finish_batch(p_batch_id);
    end if;
    select * into v_take from kiln_private.dispatch_batch_lines(greatest(v_completed, 10), p_batch_id);
    if v_take.take_from is not null then
      v_lines := kiln.start_batch_lines(p_batch_id, v_take.take_from, v_take.take_to, p_worker_id, p_job_id,
                                        p_stale_seconds, p_wait_ms, p_max_crashes, false) -> 'lines';
    end if;
  end if;
  perform set_config('kiln.batch_bulk', 'off', true);
  return json_build_object('applied', v_applied, 'lines', v_lines);
end;
$function$;
comment on function kiln.complete_batch_lines(uuid,uuid[],jsonb,bigint[],text[],text[],text,bigint,integer,integer,integer) is 'A batch__run job''s completion of the code lines of its group that ran to an end, in one call and set-based: the lines'' results, their charges settled at the actual cost (clamped to the reservation) with one update per pool, key and end user''s cap, then the batch counted once (may end it) and its account''s oldest slot-waiting generation nudged. Idempotent as kiln.complete_generation: a line already ended, or named twice, is not applied again, and a charge is settled once. With p_worker_id (the job goes on), the next lines are dispatched and the first group of this batch whose turn it is is started for job p_job_id (kiln.start_batch_lines) and returned as lines; without it, the next lines are queued (kiln_private.count_batch_lines). p_results is a JSON array, one result per id. Returns applied, per line, and lines.';
