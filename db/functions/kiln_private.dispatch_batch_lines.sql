-- functions/kiln_private.dispatch_batch_lines.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.dispatch_batch_lines.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.dispatch_batch_lines(p_limit integer, p_take uuid, OUT n integer, OUT take_from integer, OUT take_to integer)
 RETURNS record
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_b kiln_private.batches;
  v_full uuid[] := '{}';
  v_free int;
  v_slots int;
  v_size int;
  v_k int;
  v_pending int;
  v_queued int;
begin
  n := 0;
  -- Round-robin by billing scope: each pass queues one group of lines (one batch__run job) of the
  -- scope whose turn is oldest, among batches with lines left, not expired, whose account has a
  -- slot free. A group is up to half the account's parallel slots (at most 10), so that two run
  -- at once; a smaller one is queued only when nothing of the account is queued or running (its
  -- end queues the next). A job's priority is 10 + the lines its scope already has queued, so the
  -- queue interleaves scopes (interactive generations run at priority 0: always first).
  while n < p_limit loop
    select b.* into v_b
      from kiln_private.batches b
      left join kiln_private.batch_turns t on t.scope_id = b.scope_id
      where b.status = 'in_progress' and not b.expired and b.next_line < b.total and b.expires_at > now()
        and not (b.account_id = any (v_full))
      order by t.turn nulls first, b.created_at, b.id
      limit 1
      for update of b skip locked;
    exit when not found;
    v_free := coalesce(kiln_private.batch_capacity(v_b.account_id), 0);
    select coalesce(a.parallel_slots, t.parallel_slots) into v_slots
      from kiln_private.accounts a join kiln_private.tiers t on t.tier = a.tier where a.id = v_b.account_id;
    v_size := least(greatest(coalesce(v_slots, 1) / 2, 1), 10, v_b.total - v_b.next_line);
    if v_free <= 0 or (v_free < v_size and (
          exists (select 1 from kiln_private.batches x where x.account_id = v_b.account_id and x.status = 'in_progress' and x.in_queue > 0)
          or exists (select 1 from kiln_private.generations g
                     where g.account_id = v_b.account_id and g.status = 'processing' and g.batch_id is not null))) then
      v_full := v_full || v_b.account_id;
      continue;
    end if;
    v_k := least(v_size, v_free, p_limit - n);
    select count(*)::int into v_pending from kiln_private.generations g
      where g.batch_id = v_b.id and g.batch_line between v_b.next_line + 1 and v_b.next_line + v_k and g.status = 'pending';
    select coalesce(sum(b.in_queue), 0)::int into v_queued from kiln_private.batches b
      where b.scope_id = v_b.scope_id and b.status = 'in_progress';
    update kiln_private.batches
      set next_line = next_line + v_k,
          in_queue = in_queue + v_pending,
          updated_at = now()
      where id = v_b.id;
    if v_pending > 0 then
      -- The group goes to the batch__run job asking (p_take: its batch) instead of the queue, once,
      -- while no other scope's group waits in the queue for a worker slot (that job ends instead,
      -- and frees its slot for it) and no interactive generation of the account waits for a slot.
      if p_take = v_b.id and take_from is null
         and not exists (select 1 from kiln_private.batches x
                         where x.status = 'in_progress' and x.in_queue > 0 and x.scope_id <> v_b.scope_id)
         and not exists (select 1 from kiln_private.generations g
                         where g.account_id = v_b.account_id and g.status = 'pending' and g.waiting and g.batch_id is null) then
        take_from := v_b.next_line + 1;
        take_to := v_b.next_line + v_k;
      else
        perform graphile_worker.add_job('batch__run',
          json_build_object('batch', v_b.id, 'from', v_b.next_line + 1, 'to', v_b.next_line + v_k),
          job_key => 'batch:' || v_b.id || ':' || (v_b.next_line + 1), priority => 10 + least(v_queued, 1000),
          max_attempts => kiln_private.generation_job_attempts(), flags => array['batch']);
      end if;
    end if;
    insert into kiln_private.batch_turns (scope_id, turn) values (v_b.scope_id, nextval('kiln_private.batch_turn_seq'))
      on conflict (scope_id) do update set turn = excluded.turn;
    n := n + v_k;
  end loop;
end;
$function$;
comment on function kiln_private.dispatch_batch_lines(integer,uuid) is 'Queues up to p_limit batch lines in groups (a batch__run job per group of consecutive lines, flagged batch: workers keep slots such jobs never take), round-robin by billing scope, within each account''s free parallel slots (kiln_private.batch_capacity), at priority 10 + the lines the scope already has queued: interactive work (priority 0) always starts first. A group is up to half the account''s slots (at most 10); a smaller one only when nothing of the account is queued or running. The first group of batch p_take is handed to the caller (take_from, take_to: a batch__run job that runs it at once, kiln.complete_batch_lines) instead of queued, unless another scope''s group waits in the queue or an interactive generation of the account waits for a slot. Returns how many lines it took (n).';
