-- functions/kiln_private.dispatch_batches.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.dispatch_batches.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.dispatch_batches(p_limit integer)
 RETURNS integer
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_b kiln_private.batches;
  v_full uuid[] := '{}';
  v_gen record;
  v_queued int;
  v_n int := 0;
begin
  -- Round-robin by billing scope: each pass queues one line of the scope whose turn is oldest,
  -- among batches with lines left, not expired, whose account has a slot free. A line's job
  -- priority is 10 + the lines its scope already has queued, so the queue interleaves scopes
  -- (interactive generations run at priority 0: always first).
  while v_n < p_limit loop
    select b.* into v_b
      from kiln_private.batches b
      left join kiln_private.batch_turns t on t.scope_id = b.scope_id
      where b.status = 'in_progress' and not b.expired and b.next_line < b.total and b.expires_at > now()
        and not (b.account_id = any (v_full))
      order by t.turn nulls first, b.created_at, b.id
      limit 1
      for update of b skip locked;
    exit when not found;
    if coalesce(kiln_private.batch_capacity(v_b.account_id), 0) <= 0 then
      v_full := v_full || v_b.account_id;
      continue;
    end if;
    select g.id, g.status into v_gen from kiln_private.generations g
      where g.batch_id = v_b.id and g.batch_line = v_b.next_line + 1;
    select coalesce(sum(b.in_queue), 0)::int into v_queued from kiln_private.batches b
      where b.scope_id = v_b.scope_id and b.status = 'in_progress';
    update kiln_private.batches
      set next_line = next_line + 1,
          in_queue = in_queue + (v_gen.status = 'pending')::int,
          updated_at = now()
      where id = v_b.id;
    if v_gen.status = 'pending' then
      perform graphile_worker.add_job('generation__run', json_build_object('id', v_gen.id),
        job_key => v_gen.id::text, priority => 10 + least(v_queued, 1000),
        max_attempts => kiln_private.generation_job_attempts());
    end if;
    insert into kiln_private.batch_turns (scope_id, turn) values (v_b.scope_id, nextval('kiln_private.batch_turn_seq'))
      on conflict (scope_id) do update set turn = excluded.turn;
    v_n := v_n + 1;
  end loop;
  return v_n;
end;
$function$;
comment on function kiln_private.dispatch_batches(integer) is 'Queues up to p_limit batch lines (a generation__run job each), round-robin by billing scope, within each account''s free parallel slots (kiln_private.batch_capacity), at priority 10 + the lines the scope already has queued: interactive work (priority 0) always starts first. Returns how many lines it took.';
