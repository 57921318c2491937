--! Previous: sha1:8d939bcd591ea0eebd4a96a1f037b406bd4d1697
--! Hash: sha1:21827366119a2d83875514bd63935e8646e622fe
--! Message: batches lanes pricing attribution

--! split: 1-current.sql
-- A batch (docs/api.md, "Batches"): a row, and its lines are generations with its batch_id. Lines
-- reserve nothing until they start; they are queued a few at a time (kiln_private.dispatch_batches),
-- taking turns across billing scopes, behind interactive work.
create table if not exists kiln_private.batches (
  id uuid primary key default kiln_private.uuid_v7(),
  account_id uuid not null references kiln_private.accounts(id),
  workspace_id uuid references kiln_private.workspaces(id),
  key_id uuid references kiln_private.api_keys(id),
  -- The billing scope the lines take turns in: the workspace, else the account.
  scope_id uuid not null,
  status text not null default 'in_progress' check (status in ('in_progress', 'completed', 'canceling', 'canceled', 'expired')),
  total integer not null check (total between 1 and 50000),
  completed integer not null default 0,
  failed integer not null default 0,
  canceled integer not null default 0,
  -- Lines 1 … next_line have been queued (a job each); in_queue of them have not started yet.
  next_line integer not null default 0,
  in_queue integer not null default 0,
  spent_micros bigint not null default 0,
  -- The batch passed its expiry: lines not started were ended as expired.
  expired boolean not null default false,
  created_at timestamptz not null default now(),
  started_at timestamptz,
  completed_at timestamptz,
  expires_at timestamptz not null,
  updated_at timestamptz not null default now(),
  check ((status in ('completed', 'canceled', 'expired')) = (completed_at is not null))
);
create index if not exists batches_account_created_idx on kiln_private.batches (account_id, created_at desc, id desc);
create index if not exists batches_open_idx on kiln_private.batches (expires_at) where status in ('in_progress', 'canceling');
comment on table kiln_private.batches is 'POST /batches: one row per batch; its lines are kiln_private.generations with batch_id. Counters are kept by kiln_private.tg_generations__batch.';

-- Whose turn it is: the billing scope queued longest ago goes next.
create table if not exists kiln_private.batch_turns (
  scope_id uuid primary key,
  turn bigint not null
);
create sequence if not exists kiln_private.batch_turn_seq;

alter table kiln_private.generations
  add column if not exists batch_id uuid references kiln_private.batches(id),
  add column if not exists batch_line integer,
  add column if not exists custom_id text;
create unique index if not exists generations_batch_line_key on kiln_private.generations (batch_id, batch_line) where batch_id is not null;
create index if not exists generations_batch_list_idx on kiln_private.generations (batch_id, created_at, batch_line) where batch_id is not null;
-- Slot-waiting generations, found without walking a batch's pending lines.
create index if not exists generations_waiting_idx on kiln_private.generations (account_id, created_at) where waiting and status = 'pending';

-- A batch line reserves when it starts, as a run output does.
alter table kiln_private.generations drop constraint if exists generations_charge_check;
alter table kiln_private.generations add constraint generations_charge_check
  check (charge_id is not null or run_id is not null or batch_id is not null) not valid;
alter table kiln_private.generations validate constraint generations_charge_check;

-- Batch lines emit no generation.* events: the batch does (batch.completed, …).
drop trigger if exists tg_generations__outbox on kiln_private.generations;
create trigger tg_generations__outbox after update of status on kiln_private.generations
  for each row when (old.status is distinct from new.status and new.status in ('completed', 'failed') and new.run_id is null and new.batch_id is null)
  execute function kiln_private.tg_generations__outbox();

-- included from db/functions/kiln_private.batch_body.sql
-- functions/kiln_private.batch_body.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.batch_body.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.batch_body(b kiln_private.batches)
 RETURNS json
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'id', b.id,
    'status', b.status,
    'requestCounts', json_build_object('total', b.total, 'completed', b.completed, 'failed', b.failed, 'canceled', b.canceled),
    'createdAt', to_char(b.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'startedAt', to_char(b.started_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'completedAt', to_char(b.completed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'expiresAt', to_char(b.expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'spentMicros', b.spent_micros);
$function$;
comment on function kiln_private.batch_body(kiln_private.batches) is 'A batch as the API shows it: id, status, requestCounts {total, completed, failed, canceled}, createdAt, startedAt, completedAt, expiresAt and spentMicros.';
-- end of db/functions/kiln_private.batch_body.sql
-- included from db/functions/kiln_private.batch_capacity.sql
-- functions/kiln_private.batch_capacity.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.batch_capacity.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.batch_capacity(p_account_id uuid)
 RETURNS integer
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- The account's parallel slots not in use and not already promised to a queued batch line.
  select coalesce(a.parallel_slots, t.parallel_slots)
         - kiln_private.busy_slots(a.id)
         - coalesce((select sum(b.in_queue) from kiln_private.batches b
                     where b.account_id = a.id and b.status = 'in_progress'), 0)::int
  from kiln_private.accounts a
  join kiln_private.tiers t on t.tier = a.tier
  where a.id = p_account_id and a.tier <> 'blocked';
$function$;
comment on function kiln_private.batch_capacity(uuid) is 'How many more batch lines of the account may be queued now: its parallel slots less those processing and those promised to queued lines (null for a blocked or unknown account).';
-- end of db/functions/kiln_private.batch_capacity.sql
-- included from db/functions/kiln_private.dispatch_batches.sql
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
-- end of db/functions/kiln_private.dispatch_batches.sql
-- included from db/functions/kiln.dispatch_batches.sql
-- functions/kiln.dispatch_batches.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.dispatch_batches.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.dispatch_batches(p_limit integer)
 RETURNS integer
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select kiln_private.dispatch_batches(least(greatest(p_limit, 0), 1000));
$function$;
comment on function kiln.dispatch_batches(integer) is 'The worker''s sweep: queues batch lines that free slots now allow (a slot freed by an interactive generation, a line whose queueing was missed), at most p_limit (≤ 1000). Lines are otherwise queued when a batch is created and when one of its lines ends.';
-- end of db/functions/kiln.dispatch_batches.sql
-- included from db/functions/kiln_private.finish_batch.sql
-- functions/kiln_private.finish_batch.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.finish_batch.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.finish_batch(p_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_b kiln_private.batches;
begin
  update kiln_private.batches b
    set status = case when b.status = 'canceling' then 'canceled' when b.expired then 'expired' else 'completed' end,
        completed_at = now(), in_queue = 0, updated_at = now()
    where b.id = p_id and b.status in ('in_progress', 'canceling') and b.completed + b.failed + b.canceled >= b.total
    returning * into v_b;
  if found then
    perform kiln_private.emit_event(v_b.scope_id, 'batch.' || v_b.status, v_b.id, kiln_private.batch_body(v_b));
  end if;
  -- Watchers of the batch (GET /batches/{id}/events) read it again.
  perform pg_notify('kiln_status', json_build_object('k', 'batch', 'id', p_id)::text);
end;
$function$;
comment on function kiln_private.finish_batch(uuid) is 'After a batch''s counts changed: when every line has ended, the batch ends (completed, canceled after a cancel, expired after its expiry) and emits batch.completed / batch.canceled / batch.expired; notifies its event streams either way.';
-- end of db/functions/kiln_private.finish_batch.sql
-- included from db/functions/kiln_private.tg_generations__batch.sql
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
    -- Its slot is free: the next line (of whichever scope's turn it is) is queued.
    perform kiln_private.dispatch_batches(1);
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_generations__batch() is 'Trigger: a batch line that starts leaves the batch''s queue; one that ends is counted (completed, failed, canceled; its cost in spent_micros), may end the batch (kiln_private.finish_batch), and lets the next line be queued (kiln_private.dispatch_batches). Skipped while kiln.batch_bulk is on (a cancel or an expiry counts its lines itself).';
-- end of db/functions/kiln_private.tg_generations__batch.sql
drop trigger if exists tg_generations__batch on kiln_private.generations;
create trigger tg_generations__batch after update of status on kiln_private.generations
  for each row when (old.status is distinct from new.status and new.batch_id is not null)
  execute function kiln_private.tg_generations__batch();
-- included from db/functions/kiln.create_batch.sql
-- functions/kiln.create_batch.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.create_batch.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.create_batch(p_account_id uuid, p_workspace_id uuid, p_key_id uuid, p_origin text, p_custom_ids text[], p_types text[], p_model_ids text[], p_requests jsonb[], p_reserves bigint[], p_max_attempts integer, p_idem_key text DEFAULT NULL::text, p_fingerprint bytea DEFAULT NULL::bytea, p_idem_ttl_seconds integer DEFAULT 86400, p_expires_seconds integer DEFAULT 86400)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid := kiln_private.uuid_v7();
  v_n int := coalesce(cardinality(p_custom_ids), 0);
  v_claim record;
  v_b kiln_private.batches;
  v_missing int[];
begin
  if v_n < 1 or v_n > 50000 then
    raise exception 'a batch has 1 to 50000 lines' using errcode = '22023';
  end if;
  if cardinality(p_types) <> v_n or cardinality(p_model_ids) <> v_n or cardinality(p_requests) <> v_n or cardinality(p_reserves) <> v_n then
    raise exception 'one type, model, request and reservation per line' using errcode = '22023';
  end if;
  -- A key made with requireEndUser: every line names its end user, or nothing is created.
  if exists (select 1 from kiln_private.api_keys k where k.id = p_key_id and k.require_end_user) then
    select array_agg(u.i order by u.i) into v_missing
      from unnest(p_requests) with ordinality as u(r, i) where u.r->>'endUser' is null;
    if v_missing is not null then
      return json_build_object('outcome', 'end_user_required', 'lines', v_missing);
    end if;
  end if;
  if p_idem_key is not null then
    select * into v_claim from kiln_private.claim_idempotency_keys(array[p_account_id], array['POST /batches'], array[p_idem_key],
      array[p_fingerprint], array[202], array[jsonb_build_object('id', v_id)], p_idem_ttl_seconds);
    if v_claim.outcome = 'conflict' then
      return json_build_object('outcome', 'conflict');
    elsif v_claim.outcome = 'pending' then
      return json_build_object('outcome', 'pending');
    elsif v_claim.outcome in ('replay', 'follower') then
      select * into v_b from kiln_private.batches where id = (v_claim.response_body->>'id')::uuid;
      return json_build_object('outcome', 'replayed', 'batch', kiln_private.batch_body(v_b));
    end if;
  end if;

  insert into kiln_private.batches (id, account_id, workspace_id, key_id, scope_id, total, expires_at)
    values (v_id, p_account_id, p_workspace_id, p_key_id, coalesce(p_workspace_id, p_account_id), v_n,
            now() + make_interval(secs => p_expires_seconds));
  -- Set-based: no reservation and no job yet (each line reserves when it starts).
  insert into kiln_private.generations
    (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, charge_id, max_attempts, batch_id, batch_line, custom_id,
     end_user, metadata)
  select kiln_private.uuid_v7(), p_account_id, p_key_id, p_workspace_id, p_origin, u.m, u.t, u.r, u.res, null, p_max_attempts, v_id, u.i, u.c,
         u.r->>'endUser', nullif(u.r->'metadata', 'null'::jsonb)
  from unnest(p_custom_ids, p_types, p_model_ids, p_requests, p_reserves) with ordinality as u(c, t, m, r, res, i);
  perform kiln_private.dispatch_batches(least(v_n, 1000));
  select * into v_b from kiln_private.batches where id = v_id;
  return json_build_object('outcome', 'created', 'batch', kiln_private.batch_body(v_b));
end;
$function$;
comment on function kiln.create_batch(uuid,uuid,uuid,text,text[],text[],text[],jsonb[],bigint[],integer,text,bytea,integer,integer) is 'POST /batches after every line passed validation: the batch and one pending generation per line (batch_line from 1, custom_id; reserved_micros its worst case, reserved only when it starts), in one transaction, then queues the first lines (kiln_private.dispatch_batches). Each line keeps its request''s attribution (endUser, metadata); a key made with requireEndUser gets outcome end_user_required with the lines (1-based) that lack an endUser, and nothing is created. With an Idempotency-Key: outcome replayed with the stored batch, conflict (another body) or pending (still in flight); else created.';
-- end of db/functions/kiln.create_batch.sql
-- included from db/functions/kiln.get_batch.sql
-- functions/kiln.get_batch.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_batch.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_batch(p_account_id uuid, p_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select kiln_private.batch_body(b) from kiln_private.batches b where b.id = p_id and b.account_id = p_account_id;
$function$;
comment on function kiln.get_batch(uuid,uuid) is 'A batch of the account as the API shows it (kiln_private.batch_body); null when there is none.';
-- end of db/functions/kiln.get_batch.sql
-- included from db/functions/kiln.list_batches.sql
-- functions/kiln.list_batches.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_batches.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_batches(p_account_id uuid, p_before_created timestamp with time zone, p_before_id uuid, p_limit integer)
 RETURNS TABLE(at text, id uuid, body json)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select (extract(epoch from b.created_at) * 1000000)::bigint::text, b.id, kiln_private.batch_body(b)
  from kiln_private.batches b
  where b.account_id = p_account_id
    and (p_before_created is null or (b.created_at, b.id) < (p_before_created, p_before_id))
  order by b.created_at desc, b.id desc
  limit least(greatest(p_limit, 1), 101);
$function$;
comment on function kiln.list_batches(uuid,timestamp with time zone,uuid,integer) is 'The account''s batches, newest first, a keyset page after (p_before_created, p_before_id); `at` is created_at in epoch microseconds (the next cursor).';
-- end of db/functions/kiln.list_batches.sql
-- included from db/functions/kiln.cancel_batch.sql
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
begin
  -- Only the batch row here: its lines are ended by kiln.end_batch_lines in a transaction of its
  -- own, which locks lines before the batch, as the workers' transactions do (no lock cycle).
  update kiln_private.batches set status = 'canceling', updated_at = now()
    where id = p_id and account_id = p_account_id and status = 'in_progress'
    returning * into v_b;
  if found then
    return json_build_object('outcome', 'canceled', 'batch', kiln_private.batch_body(v_b));
  end if;
  select * into v_b from kiln_private.batches where id = p_id and account_id = p_account_id;
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  return json_build_object('outcome', case when v_b.status = 'canceling' then 'canceled' else 'conflict' end, 'batch', kiln_private.batch_body(v_b));
end;
$function$;
comment on function kiln.cancel_batch(uuid,uuid) is 'POST /batches/{id}/cancel: the batch goes canceling (no line is queued or started any more); the caller then ends its lines with kiln.end_batch_lines (the worker''s sweep does it too, after a crash in between). Outcome canceled (also when already canceling), conflict (it had ended) or missing.';
-- end of db/functions/kiln.cancel_batch.sql
drop function if exists kiln.expire_batches(integer);
-- included from db/functions/kiln.expire_batches.sql
-- functions/kiln.expire_batches.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.expire_batches.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.expire_batches(p_limit integer)
 RETURNS SETOF uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- Batches past their expiry are marked (no line of them is queued or started any more)…
  update kiln_private.batches b set expired = true, updated_at = now()
    where b.id in (select x.id from kiln_private.batches x
                   where x.status = 'in_progress' and x.expires_at <= now() and not x.expired
                   order by x.expires_at limit p_limit for update skip locked);
  -- …and every batch whose lines are left to end is returned, for kiln.end_batch_lines (a batch
  -- canceled or expired whose lines a crash left, too).
  return query
    select b.id from kiln_private.batches b
    where (b.status = 'canceling' or (b.status = 'in_progress' and b.expired))
    order by b.updated_at
    limit p_limit;
end;
$function$;
comment on function kiln.expire_batches(integer) is 'The worker''s sweep: marks up to p_limit batches past their expiresAt as expired, and returns the batches (at most p_limit) whose lines kiln.end_batch_lines has to end: expired ones and canceling ones.';
-- end of db/functions/kiln.expire_batches.sql
-- included from db/functions/kiln.end_batch_lines.sql
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
-- end of db/functions/kiln.end_batch_lines.sql
-- included from db/functions/kiln.batch_results.sql
-- functions/kiln.batch_results.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.batch_results.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.batch_results(p_account_id uuid, p_id uuid, p_after_line integer, p_limit integer)
 RETURNS TABLE(line integer, custom_id text, body json)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select g.batch_line, g.custom_id, kiln_private.generation_body(g)
  from kiln_private.batches b
  join kiln_private.generations g on g.batch_id = b.id
  where b.id = p_id and b.account_id = p_account_id
    -- A range of lines, not a LIMIT: it reads at most p_limit rows whatever the statistics say
    -- (with those of a batch just made, a LIMIT was planned as a sort of every line left).
    and g.batch_line > p_after_line and g.batch_line <= p_after_line + least(greatest(p_limit, 1), 5000)
    and g.status in ('completed', 'failed')
  order by g.batch_line;
$function$;
comment on function kiln.batch_results(uuid,uuid,integer,integer) is 'GET /batches/{id}/results: the ended lines of a batch of the account among lines p_after_line + 1 … p_after_line + p_limit (at most 5000 lines; those not ended are left out), in line order, with their custom_id and body (kiln_private.generation_body).';
-- end of db/functions/kiln.batch_results.sql
-- included from db/functions/kiln.list_batch_generations.sql
-- functions/kiln.list_batch_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_batch_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_batch_generations(p_account_id uuid, p_batch_id uuid, p_limit integer, p_before_at timestamp with time zone, p_before_id uuid, p_statuses text[], p_types text[], p_model_id text, p_since timestamp with time zone, p_end_user text DEFAULT NULL::text, p_metadata jsonb DEFAULT NULL::jsonb)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_limit int := least(greatest(coalesce(p_limit, 20), 1), 100);
  v_at timestamptz := coalesce(p_before_at, 'infinity');
  v_id uuid := coalesce(p_before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
  v_line int;
  v_ids uuid[];
  v_next json;
  v_data json;
begin
  -- Only the account's own batch: another account's id lists nothing.
  if not exists (select 1 from kiln_private.batches b where b.id = p_batch_id and b.account_id = p_account_id) then
    return json_build_object('data', '[]'::json, 'next', null);
  end if;
  -- Newest first is last line first (a batch's lines share their created_at); the cursor's id
  -- names the line to go on after.
  if p_before_id is not null then
    select g.batch_line into v_line from kiln_private.generations g where g.id = p_before_id and g.batch_id = p_batch_id;
  end if;
  v_line := coalesce(v_line, 2147483647);
  select array_agg(h.id order by h.created_at desc, h.batch_line desc) into v_ids
  from (select g.created_at, g.batch_line, g.id from kiln_private.generations g
        where g.batch_id = p_batch_id and (g.created_at, g.batch_line) < (v_at, v_line)
          and (p_statuses is null or g.status = any (p_statuses))
          and (p_types is null or g.type = any (p_types))
          and (p_model_id is null or g.model_id = p_model_id)
          and (p_since is null or g.created_at >= p_since)
          and (p_end_user is null or g.end_user = p_end_user)
          and (p_metadata is null or g.metadata @> p_metadata)
        order by g.created_at desc, g.batch_line desc
        limit v_limit + 1) h;
  v_ids := coalesce(v_ids, '{}');
  select coalesce(json_agg(kiln_private.generation_body(g) order by g.created_at desc, g.batch_line desc), '[]'),
         case when cardinality(v_ids) > v_limit then
           (select json_build_object('at', (extract(epoch from l.created_at) * 1000000)::bigint::text, 'id', l.id)
            from kiln_private.generations l where l.id = v_ids[v_limit]) end
    into v_data, v_next
    from kiln_private.generations g
    where g.id = any (v_ids[1:v_limit]);
  return json_build_object('data', v_data, 'next', v_next);
end;
$function$;
comment on function kiln.list_batch_generations(uuid,uuid,integer,timestamp with time zone,uuid,text[],text[],text,timestamp with time zone,text,jsonb) is 'GET /generations?batchId=: a page of the lines of the account''s batch, last line first (keyset on created_at and the cursor''s line), with GET /generations'' other filters (end user and metadata included): {data: [kiln_private.generation_body], next}.';
-- end of db/functions/kiln.list_batch_generations.sql
-- included from db/functions/kiln_private.generation_body.sql
-- functions/kiln_private.generation_body.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.generation_body.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.generation_body(g kiln_private.generations)
 RETURNS json
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- plpgsql, not sql: its columns are resolved when it runs, so an earlier migration may define
  -- it before a later one adds a column it reads (end_user, metadata).
  return json_build_object(
    'id', g.id,
    'status', g.status,
    'type', g.type,
    'result', case when g.status = 'completed' then g.result end,
    'error', case when g.status = 'failed' then g.error end,
    'cost_micros', g.cost_micros,
    'prompt', g.request->>'prompt',
    'batch_id', g.batch_id,
    'custom_id', g.custom_id,
    'end_user', g.end_user,
    'metadata', g.metadata);
end;
$function$;
comment on function kiln_private.generation_body(kiln_private.generations) is 'A generation as the API reads it: id, status, type, result (completed), error (failed), billed cost, the request''s prompt, for a batch line its batch_id and custom_id, and its attribution (end_user, metadata; null when not given).';
-- end of db/functions/kiln_private.generation_body.sql
-- included from db/functions/kiln_private.nudge_waiting_generation.sql
-- functions/kiln_private.nudge_waiting_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.nudge_waiting_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.nudge_waiting_generation(p_account_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_next kiln_private.generations;
begin
  -- Locked, so that it cannot interleave with kiln.start_generation of the same generation (which
  -- locks it too); one being started is skipped for the next.
  select * into v_next from kiln_private.generations
    where account_id = p_account_id and status = 'pending' and waiting
    -- Interactive work first (docs/api.md, "Batches"): a waiting batch line goes after it.
    order by (batch_id is not null), created_at
    limit 1
    for update skip locked;
  if found then
    -- Same job key: moves the waiting job's run_at to now. Should a worker have just picked that
    -- job up, add_job queues a new one instead and start_generation ends the old (superseded).
    perform graphile_worker.add_job('generation__run', json_build_object('id', v_next.id),
                                    job_key => v_next.id::text, priority => case when v_next.batch_id is null then 0 else 10 end,
                                    max_attempts => kiln_private.generation_job_attempts());
  end if;
end;
$function$;
comment on function kiln_private.nudge_waiting_generation(uuid) is 'Runs the oldest slot-waiting generation of an account now (called when a slot frees), interactive ones before batch lines; one being started at this moment is skipped.';
-- end of db/functions/kiln_private.nudge_waiting_generation.sql
-- included from db/functions/kiln.defer_generation.sql
-- functions/kiln.defer_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.defer_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.defer_generation(p_id uuid, p_worker_id text, p_job_id bigint, p_error text, p_counted boolean DEFAULT true)
 RETURNS kiln_private.generations
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
begin
  update kiln_private.generations
    set status = 'pending', worker_id = null, job_id = null, last_error = left(p_error, 1000), updated_at = now(),
        -- An execution cut short by its worker (shutdown, lost lease) is not an attempt.
        attempts = case when p_counted then attempts else greatest(attempts - 1, 0) end,
        crash_streak = case when p_counted then 0 else crash_streak end
    where id = p_id and status = 'processing' and worker_id = p_worker_id and job_id = p_job_id
    returning * into v_gen;
  if found then
    if v_gen.run_id is not null then
      update kiln_private.workflow_run_outputs set status = 'queued', updated_at = now()
        where run_id = v_gen.run_id and output_node_id = v_gen.output_node_id and status = 'running';
    end if;
    -- The retry is a new job (this one, still locked, loses the key and ends): graphile-worker's
    -- backoff after a counted attempt (e^attempts seconds, at most e^10), at once after a shutdown.
    perform graphile_worker.add_job('generation__run', json_build_object('id', p_id),
      run_at => now() + case when p_counted then make_interval(secs => exp(least(v_gen.attempts, 10))) else interval '0' end,
      job_key => p_id::text, priority => case when v_gen.batch_id is null then 0 else 10 end,
      max_attempts => kiln_private.generation_job_attempts());
    perform kiln_private.nudge_waiting_generation(v_gen.account_id);
  end if;
  return v_gen;
end;
$function$;
comment on function kiln.defer_generation(uuid,text,bigint,text,boolean) is 'A transient failure: back to pending (freeing the slot, keeping any reservation) and a new job for the retry, after graphile-worker''s backoff when the attempt counts, at once when it does not (p_counted false: the worker shut down or lost its lease during it). Only the lease holder may defer.';
-- end of db/functions/kiln.defer_generation.sql
-- included from db/functions/kiln.start_generation.sql
-- functions/kiln.start_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.start_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.start_generation(p_id uuid, p_worker_id text, p_job_id bigint, p_stale_seconds integer, p_wait_ms integer, p_job_max_attempts integer, p_max_crashes integer DEFAULT 10)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
  v_run kiln_private.workflow_runs;
  v_out kiln_private.workflow_run_outputs;
  v_account kiln_private.accounts;
  v_run_id uuid;
  v_slots int;
  v_n int;
  v_crashed boolean := false;
  v_held boolean;
begin
  select run_id into v_run_id from kiln_private.generations where id = p_id;
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  if v_run_id is not null then
    select * into v_run from kiln_private.workflow_runs where id = v_run_id for update;
  end if;
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if v_gen.status in ('completed', 'failed') then
    return json_build_object('outcome', 'done', 'status', v_gen.status);
  end if;
  if v_run_id is not null then
    select * into v_out from kiln_private.workflow_run_outputs
      where run_id = v_run_id and output_node_id = v_gen.output_node_id for update;
    if v_out.status = 'waiting' then
      return json_build_object('outcome', 'not_ready'); -- a stray job: its upstream will enqueue it
    end if;
  end if;
  -- Another job holds this generation's key: this one was superseded (graphile-worker's add_job
  -- clears the key of a locked job and queues a new one, e.g. a slot nudge that met this job
  -- between its pickup and this call). The newer job runs it; this one ends.
  if exists (select 1 from graphile_worker.jobs j where j.key = p_id::text and j.id <> p_job_id) then
    return json_build_object('outcome', 'superseded');
  end if;

  if v_gen.status = 'processing' then
    if v_gen.worker_id = p_worker_id and v_gen.job_id = p_job_id then
      null; -- the same job again (cannot normally happen): carry on
    elsif kiln_private.lease_held(v_gen.worker_id, v_gen.job_id, p_stale_seconds) then
      -- A live worker is running it, however slowly: never run it twice.
      return json_build_object('outcome', 'busy');
    end if;
    -- Otherwise its worker died during the execution (a crash, a kill, a lost session): take it
    -- over; the slot is already held. The cut-off execution is a crash, not an attempt: it never
    -- counts toward max_attempts, but N of them in a row (p_max_crashes) fail the generation, in
    -- case it is what stops its workers.
    v_crashed := v_gen.worker_id is distinct from p_worker_id or v_gen.job_id is distinct from p_job_id;
    if v_crashed and v_gen.crash_streak + 1 >= p_max_crashes then
      update kiln_private.generations
        set crashes = crashes + 1, crash_streak = crash_streak + 1, attempts = greatest(attempts - 1, 0), updated_at = now()
        where id = p_id;
      perform kiln.fail_generation(p_id, format(
        'the worker running this generation stopped during it %s times in a row (it crashed or was killed), so it was not run again: '
        'the request may be what stops the worker. Nothing was charged.', v_gen.crash_streak + 1));
      return json_build_object('outcome', 'done', 'status', 'failed', 'settled', true, 'type', v_gen.type, 'model_id', v_gen.model_id);
    end if;
  else
    if v_run_id is not null then
      if v_run.status in ('completed', 'failed') then
        v_n := kiln_private.abandon_workflow_outputs(v_run_id, array[v_gen.output_node_id]);
        update kiln_private.workflow_runs set abandoned = abandoned + v_n where id = v_run_id;
        perform kiln_private.note_workflow_progress(v_run_id, 0);
        return json_build_object('outcome', 'done', 'status', 'abandoned');
      end if;
      if v_gen.started_at is null and clock_timestamp() > v_run.deadline then
        perform kiln.expire_workflow_run(v_run_id, p_stale_seconds);
        return json_build_object('outcome', 'done', 'status', 'failed');
      end if;
    end if;
    -- A line of a batch canceled or expired meanwhile never starts (docs/api.md, "Batches").
    if v_gen.batch_id is not null and exists (select 1 from kiln_private.batches b
        where b.id = v_gen.batch_id and (b.status <> 'in_progress' or b.expired)) then
      perform kiln_private.end_generation(p_id, case when exists (select 1 from kiln_private.batches b where b.id = v_gen.batch_id and b.status <> 'in_progress')
        then 'canceled' else 'expired: the batch expired before this line started; nothing was charged' end);
      return json_build_object('outcome', 'done', 'status', 'failed', 'settled', true, 'type', v_gen.type, 'model_id', v_gen.model_id);
    end if;
    -- pending: take one of the account's parallel slots, or wait for one. Serialised per account.
    perform pg_advisory_xact_lock(hashtextextended('kiln.slots:' || v_gen.account_id::text, 0));
    select * into v_account from kiln_private.accounts where id = v_gen.account_id;
    if v_account.tier = 'blocked' then
      perform kiln.fail_generation(p_id, case when v_run_id is null then 'this account cannot run generations'
                                              else 'insufficient_quota: this account cannot run generations' end);
      return json_build_object('outcome', 'done', 'status', 'failed', 'settled', true, 'type', v_gen.type, 'model_id', v_gen.model_id);
    end if;
    select coalesce(v_account.parallel_slots, t.parallel_slots) into v_slots
      from kiln_private.tiers t where t.tier = v_account.tier;
    if kiln_private.busy_slots(v_gen.account_id) >= v_slots then
      -- Never rejected: wait pending and look again later (or sooner, when a slot frees).
      update kiln_private.generations set waiting = true, updated_at = now() where id = p_id;
      perform graphile_worker.add_job('generation__run', json_build_object('id', p_id),
                                      run_at => now() + make_interval(secs => p_wait_ms / 1000.0),
                                      job_key => p_id::text,
                                      -- A batch line waits in its lane (docs/api.md, "Batches").
                                      priority => case when v_gen.batch_id is null then 0 else 10 end,
                                      max_attempts => kiln_private.generation_job_attempts());
      return json_build_object('outcome', 'wait');
    end if;
  end if;

  -- An output held while the object store was down: the execution stores it, never calling the
  -- provider, so it is not an attempt.
  v_held := exists (select 1 from kiln_private.held_outputs h where h.generation_id = p_id);
  update kiln_private.generations
    set status = 'processing',
        waiting = false,
        -- A takeover replaces the cut-off execution: the attempt it was stays uncounted.
        attempts = attempts + case when v_crashed or v_held then 0 else 1 end,
        crashes = crashes + v_crashed::int,
        crash_streak = crash_streak + v_crashed::int,
        worker_id = p_worker_id,
        job_id = p_job_id,
        started_at = coalesce(started_at, now()),
        updated_at = now()
    where id = p_id
    returning * into v_gen;
  if v_run_id is not null then
    update kiln_private.workflow_run_outputs
      set status = 'running', started_at = coalesce(started_at, clock_timestamp()), updated_at = now()
      where run_id = v_run_id and output_node_id = v_gen.output_node_id;
    if v_run.status = 'pending' then
      update kiln_private.workflow_runs set status = 'running', started_at = clock_timestamp(), updated_at = now() where id = v_run_id;
    end if;
  end if;
  return json_build_object(
    'outcome', 'run',
    'attempt', v_gen.attempts,
    'max_attempts', v_gen.max_attempts,
    'crashes', v_gen.crashes,
    'account_id', v_gen.account_id,
    'type', v_gen.type,
    'model_id', v_gen.model_id,
    'request', v_gen.request,
    'reserved', v_gen.charge_id is not null,
    'batch_id', v_gen.batch_id,
    'reserved_micros', v_gen.reserved_micros,
    'run_id', v_run_id,
    'output_node_id', v_gen.output_node_id,
    'held', v_held,
    -- A run output reads the results of the outputs it depends on.
    'upstream', case when v_run_id is not null then (
      select coalesce(json_object_agg(u.output_node_id, u.result), '{}'::json)
      from kiln_private.workflow_run_outputs u
      where u.run_id = v_run_id and u.output_node_id = any (v_out.refs) and u.status = 'completed') end);
end;
$function$;
comment on function kiln.start_generation(uuid,text,bigint,integer,integer,integer,integer) is 'Moves a generation (any origin) to processing for a worker''s job, respecting the account''s parallel slots and, for a run output, its run (outcome run, with the request, whether it holds an output the object store has yet to take, and, for a run output, its upstream results), or says why not: wait (slots full; re-queued for later), busy (a live worker runs it), superseded (a newer job holds its key and runs it), done (already settled, abandoned, expired, or failed here after p_max_crashes crashes in a row or for a blocked account: then settled true, with its type and model_id, for the caller to count), not_ready (a run output whose inputs are not settled), missing. Taking over from a dead worker counts a crash, not an attempt; an execution that only stores a held output counts neither; p_job_max_attempts is unused (kept for older callers).';
-- end of db/functions/kiln.start_generation.sql
-- included from db/functions/kiln.stream_generations.sql
-- functions/kiln.stream_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.stream_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.stream_generations(p_ids uuid[], p_worker_id text, p_sessions integer[], p_offsets integer[], p_texts text[], p_progress jsonb[])
 RETURNS integer[]
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_out integer[] := '{}';
begin
  -- One call for every generation a worker is streaming (docs/api.md, "Streaming"): each flush is
  -- kiln.stream_generation's, in order.
  for i in 1 .. coalesce(cardinality(p_ids), 0) loop
    v_out := v_out || kiln.stream_generation(p_ids[i], p_worker_id, p_sessions[i], p_offsets[i], p_texts[i], null, p_progress[i]);
  end loop;
  return v_out;
end;
$function$;
comment on function kiln.stream_generations(uuid[],text,integer[],integer[],text[],jsonb[]) is 'The flushes of every generation a worker streams, in one call: kiln.stream_generation for each (text and progress; previews go one by one), returning each one''s session (0: not this worker''s any more, -1: begin again).';
-- end of db/functions/kiln.stream_generations.sql

--! split: 2-batch-pricing.sql
-- A catalog entry's batch price (docs/providers.md, "Model catalog"): batch lines bill at
-- batch_markup instead of markup, their fallbacks too; null = the entry's markup.
alter table kiln_private.models add column if not exists batch_markup numeric;
alter table kiln_private.models drop constraint if exists models_batch_markup_check;
alter table kiln_private.models add constraint models_batch_markup_check
  check (batch_markup >= 1 and (markup is null or batch_markup <= markup));
comment on column kiln_private.models.batch_markup is 'What batch lines (POST /batches) bill at instead of markup: at least 1, at most markup; null = markup.';
-- included from db/views/kiln.models.sql
-- views/kiln.models.sql: the current definition. Edit it here, and ship the change with
-- `--! include views/kiln.models.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

create or replace view kiln.models as
 SELECT id,
    name,
    description,
    category,
    provider,
    upstream,
    supports_image_input,
    input_modalities,
    output_modalities,
    cost,
    max_output_tokens,
    markup,
    enabled,
    sort_order,
    updated_at,
    fallbacks,
    batch_markup
   FROM kiln_private.models;
comment on view kiln.models is 'The model catalog (upstream cost; billed price = cost × markup; batch lines bill at batch_markup when set).';
-- end of db/views/kiln.models.sql
-- included from db/functions/kiln.upsert_model.sql
-- functions/kiln.upsert_model.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.upsert_model.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.upsert_model(p_model jsonb)
 RETURNS kiln_private.models
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_model kiln_private.models;
begin
  insert into kiln_private.models as m
    (id, name, description, category, provider, upstream, supports_image_input, input_modalities,
     output_modalities, cost, max_output_tokens, markup, enabled, sort_order, fallbacks, batch_markup)
  values (
    p_model->>'id', p_model->>'name', p_model->>'description', p_model->>'category', p_model->>'provider',
    p_model->'upstream',
    coalesce((p_model->>'supports_image_input')::boolean, false),
    coalesce(array(select jsonb_array_elements_text(p_model->'input_modalities')), array['text']),
    coalesce(array(select jsonb_array_elements_text(p_model->'output_modalities')), array['text']),
    p_model->'cost',
    (p_model->>'maxOutputTokens')::int,
    (p_model->>'markup')::numeric,
    coalesce((p_model->>'enabled')::boolean, true),
    coalesce((p_model->>'sort_order')::int, 100),
    coalesce(array(select jsonb_array_elements_text(p_model->'fallbacks')), '{}'),
    (p_model->>'batchMarkup')::numeric)
  on conflict (id) do update set
    name = excluded.name, description = excluded.description, category = excluded.category,
    provider = excluded.provider, upstream = excluded.upstream,
    supports_image_input = excluded.supports_image_input, input_modalities = excluded.input_modalities,
    output_modalities = excluded.output_modalities, cost = excluded.cost,
    max_output_tokens = excluded.max_output_tokens, markup = excluded.markup,
    enabled = excluded.enabled, sort_order = excluded.sort_order, fallbacks = excluded.fallbacks,
    batch_markup = excluded.batch_markup,
    updated_at = now()
  returning * into v_model;
  return v_model;
exception
  when check_violation or not_null_violation or invalid_text_representation then
    raise exception 'invalid model entry: %', sqlerrm using errcode = 'KI001';
end;
$function$;
comment on function kiln.upsert_model(jsonb) is 'Inserts or replaces one catalog entry (validated again in the CLI).';
-- end of db/functions/kiln.upsert_model.sql

-- Batch spend apart (docs/usage.md, docs/analysts.md): a batch line's charge names its batch, and
-- the day roll-up keeps the batch part of each group beside its totals.
alter table kiln_private.charges add column if not exists batch_id uuid references kiln_private.batches(id);
create index if not exists charges_batch_idx on kiln_private.charges (batch_id) where batch_id is not null;
comment on column kiln_private.charges.batch_id is 'The batch whose line this charge bills (set when the line reserves: kiln.reserve_generation); null for every other charge.';
alter table kiln_private.charge_days
  add column if not exists batch_charges bigint not null default 0,
  add column if not exists batch_settled_charges bigint not null default 0,
  add column if not exists batch_released_charges bigint not null default 0,
  add column if not exists batch_spend_micros bigint not null default 0;
comment on column kiln_private.charge_days.batch_spend_micros is 'The part of spend_micros settled by batch lines (charges with batch_id); batch_charges, batch_settled_charges and batch_released_charges are the batch parts of the counts. The rest is interactive.';
-- included from db/functions/kiln_private.roll_up_charges.sql
-- functions/kiln_private.roll_up_charges.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.roll_up_charges.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.roll_up_charges(p_added kiln_private.charges[], p_removed kiln_private.charges[])
 RETURNS void
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- Each ended charge row contributes its counts to its group (an open reservation contributes
  -- nothing), and a batch line's (batch_id set) to the group's batch part too; a change is its
  -- new row minus its old one.
  with delta as (
    select c.pool_id, c.period_start, (c.created_at at time zone 'UTC')::date as day, c.account_id, c.workspace_id,
           c.key_id, c.model_id, c.origin, c.sign, (c.batch_id is not null)::int as batch,
           (c.status = 'settled')::int as settled, (c.status = 'released')::int as released,
           coalesce(c.settled_micros, 0) as spend
    from (select a.*, 1 as sign from unnest(p_added) a
          union all
          select r.*, -1 from unnest(p_removed) r) c
    where c.status <> 'reserved'
  ), summed as (
    select pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
           sum(sign)::bigint as charges, sum(sign * settled)::bigint as settled, sum(sign * released)::bigint as released,
           sum(sign * spend)::bigint as spend,
           sum(sign * batch)::bigint as b_charges, sum(sign * batch * settled)::bigint as b_settled,
           sum(sign * batch * released)::bigint as b_released, sum(sign * batch * spend)::bigint as b_spend
    from delta
    group by pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin
  )
  insert into kiln_private.charge_days as t
    (pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
     charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
         charges, settled, released, spend, b_charges, b_settled, b_released, b_spend
  from summed
  where charges <> 0 or settled <> 0 or released <> 0 or spend <> 0
     or b_charges <> 0 or b_settled <> 0 or b_released <> 0 or b_spend <> 0
  -- Rows locked in key order, as budgets are: concurrent writers cannot deadlock here.
  order by pool_id, day, account_id, model_id, origin, key_id, period_start
  on conflict (pool_id, day, account_id, model_id, origin, key_id, period_start) do update
    set charges = t.charges + excluded.charges,
        settled_charges = t.settled_charges + excluded.settled_charges,
        released_charges = t.released_charges + excluded.released_charges,
        spend_micros = t.spend_micros + excluded.spend_micros,
        batch_charges = t.batch_charges + excluded.batch_charges,
        batch_settled_charges = t.batch_settled_charges + excluded.batch_settled_charges,
        batch_released_charges = t.batch_released_charges + excluded.batch_released_charges,
        batch_spend_micros = t.batch_spend_micros + excluded.batch_spend_micros;
$function$;
comment on function kiln_private.roll_up_charges(kiln_private.charges[],kiln_private.charges[]) is 'Adds the contribution of the ended (settled or released) rows of p_added to kiln_private.charge_days and subtracts that of p_removed (the old versions of changed rows), with the part of batch lines (batch_id set) in the batch_* columns, one upsert per group, groups in key order. Open reservations contribute nothing.';
-- end of db/functions/kiln_private.roll_up_charges.sql
-- included from db/functions/kiln_private.rebuild_charge_days.sql
-- functions/kiln_private.rebuild_charge_days.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.rebuild_charge_days.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.rebuild_charge_days()
 RETURNS bigint
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_rows bigint;
begin
  -- No charge may change meanwhile (the triggers keep the rollup from here on).
  lock table kiln_private.charges in share mode;
  delete from kiln_private.charge_days;
  insert into kiln_private.charge_days
    (pool_id, period_start, day, account_id, workspace_id, key_id, model_id, origin,
     charges, settled_charges, released_charges, spend_micros,
     batch_charges, batch_settled_charges, batch_released_charges, batch_spend_micros)
  select pool_id, period_start, (created_at at time zone 'UTC')::date, account_id, workspace_id, key_id, model_id, origin,
         count(*), count(*) filter (where status = 'settled'), count(*) filter (where status = 'released'),
         coalesce(sum(settled_micros), 0)::bigint,
         count(*) filter (where batch_id is not null),
         count(*) filter (where batch_id is not null and status = 'settled'),
         count(*) filter (where batch_id is not null and status = 'released'),
         coalesce(sum(settled_micros) filter (where batch_id is not null), 0)::bigint
  from kiln_private.charges
  where status <> 'reserved'
  group by pool_id, period_start, (created_at at time zone 'UTC')::date, account_id, workspace_id, key_id, model_id, origin;
  get diagnostics v_rows = row_count;
  return v_rows;
end;
$function$;
comment on function kiln_private.rebuild_charge_days() is 'Recomputes kiln_private.charge_days from the whole ledger (under a share lock on kiln_private.charges, so no charge changes meanwhile). Returns the rollup''s row count. For migrations and repair; the triggers keep it exact otherwise.';
-- end of db/functions/kiln_private.rebuild_charge_days.sql
-- included from db/functions/kiln.reserve_generation.sql
-- functions/kiln.reserve_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.reserve_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.reserve_generation(p_id uuid, p_amount_micros bigint)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
  v_charge kiln_private.charges;
begin
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if not found or v_gen.status <> 'processing' then
    return json_build_object('ok', false);
  end if;
  if v_gen.charge_id is not null then
    -- Idempotent: a retry or takeover keeps the first reservation.
    return json_build_object('ok', true, 'reserved_micros', v_gen.reserved_micros);
  end if;
  -- Raises KQ001 / KP001 when the budget cannot cover the worst case.
  v_charge := kiln.reserve_budget(v_gen.account_id, v_gen.workspace_id, v_gen.key_id, v_gen.model_id, v_gen.origin,
                                  p_amount_micros, v_gen.id, v_gen.run_id, v_gen.output_node_id);
  if v_gen.batch_id is not null then
    -- A batch line's charge names its batch: usage and the analysts' views show batch spend apart.
    update kiln_private.charges set batch_id = v_gen.batch_id where id = v_charge.id;
  end if;
  update kiln_private.generations
    set charge_id = v_charge.id, reserved_micros = v_charge.reserved_micros, updated_at = now()
    where id = p_id;
  -- The charge carries the generation's attribution (docs/api.md, "Attribution").
  if v_gen.end_user is not null or v_gen.metadata is not null then
    update kiln_private.charges set end_user = v_gen.end_user, metadata = v_gen.metadata where id = v_charge.id;
  end if;
  return json_build_object('ok', true, 'reserved_micros', v_charge.reserved_micros);
end;
$function$;
comment on function kiln.reserve_generation(uuid,bigint) is 'Reserves the worst-case cost of a processing generation created without a reservation (a run output, priced once its inputs are known; a batch line, whose charge gets its batch_id) on its budget pool, once (idempotent); the charge carries the generation''s end_user and metadata. Raises KQ001 or KP001 when the budget cannot cover it.';
-- end of db/functions/kiln.reserve_generation.sql
-- Charges of batch lines made before the column: named now (the roll-up trigger moves their part).
update kiln_private.charges c set batch_id = g.batch_id
  from kiln_private.generations g
  where g.charge_id = c.id and g.batch_id is not null and c.batch_id is null;
-- included from db/functions/kiln.get_daily_usage.sql
-- functions/kiln.get_daily_usage.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_daily_usage.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_daily_usage(p_account_id uuid, p_workspace_id uuid, p_from date, p_to date)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
declare
  v_anchor timestamptz;
  v_visible boolean := true;
  v_period timestamptz;
  v_from date := p_from;
  v_to date := p_to;
  v_pool uuid := coalesce(p_workspace_id, p_account_id);
  v_days json;
begin
  if p_workspace_id is null then
    select a.period_anchor into v_anchor from kiln_private.accounts a where a.id = p_account_id;
  else
    -- A workspace's spend is shown to its current members only (a key whose owner left sees none).
    select w.plan_period_anchor,
           exists (select 1 from kiln_private.workspace_members m
                   where m.workspace_id = w.id and m.account_id = p_account_id and m.left_at is null)
      into v_anchor, v_visible
      from kiln_private.workspaces w where w.id = p_workspace_id;
  end if;
  if v_anchor is null then
    return null;
  end if;
  if v_from is null then
    -- The current period, as GET /usage counts it: [period start, next period start) in UTC days.
    v_period := kiln_private.period_start(v_anchor, now());
    v_from := (v_period at time zone 'UTC')::date;
    v_to := ((v_period + interval '1 month') at time zone 'UTC')::date - 1;
  elsif v_to is null then
    v_to := (now() at time zone 'UTC')::date;
  end if;
  if v_from > v_to or v_to - v_from > 365 then
    raise exception 'from must not be after to, and the range at most 366 days' using errcode = 'KI001';
  end if;
  select coalesce(json_agg(json_build_object(
           'day', to_char(x.day, 'YYYY-MM-DD'), 'model_id', x.model_id,
           'spend_micros', x.spend, 'charges', x.charges, 'held_micros', x.held,
           -- The same, split by lane: batch lines and everything else; the parts add up to the totals.
           'batch', json_build_object('spend_micros', x.b_spend, 'charges', x.b_charges, 'held_micros', x.b_held),
           'interactive', json_build_object('spend_micros', x.spend - x.b_spend, 'charges', x.charges - x.b_charges,
                                            'held_micros', x.held - x.b_held)) order by x.day, x.model_id), '[]')
    into v_days
    from (select d.day, d.model_id, sum(d.spend)::bigint as spend, sum(d.charges)::bigint as charges, sum(d.held)::bigint as held,
                 sum(d.b_spend)::bigint as b_spend, sum(d.b_charges)::bigint as b_charges, sum(d.b_held)::bigint as b_held
          from (-- Ended charges from the rollup (a released one counts nothing).
                select r.day, r.model_id, r.spend_micros as spend, r.settled_charges as charges, 0::bigint as held,
                       r.batch_spend_micros as b_spend, r.batch_settled_charges as b_charges, 0::bigint as b_held
                from kiln_private.charge_days r
                where v_visible and r.pool_id = v_pool and r.day between v_from and v_to
                union all
                -- Reservations still open, at their reserved amount (charges_open_idx).
                select (c.created_at at time zone 'UTC')::date, c.model_id, c.reserved_micros, 1, c.reserved_micros,
                       case when c.batch_id is not null then c.reserved_micros else 0 end, (c.batch_id is not null)::int,
                       case when c.batch_id is not null then c.reserved_micros else 0 end
                from kiln_private.charges c
                where v_visible and c.status = 'reserved' and c.pool_id = v_pool
                  and c.created_at >= (v_from::timestamp at time zone 'UTC')
                  and c.created_at < ((v_to + 1)::timestamp at time zone 'UTC')) d
          group by d.day, d.model_id
          having sum(d.charges) > 0) x;
  return json_build_object(
    'scope', case when p_workspace_id is null then 'personal' else 'workspace' end,
    'workspace_id', p_workspace_id,
    'from', to_char(v_from, 'YYYY-MM-DD'),
    'to', to_char(v_to, 'YYYY-MM-DD'),
    'days', v_days);
end;
$function$;
comment on function kiln.get_daily_usage(uuid,uuid,date,date) is 'The GET /usage/daily body: per UTC day and model, what the caller''s billing scope (the personal pool, or a workspace-bound caller''s Team pool) used — settled charges at their settled amount (kiln_private.charge_days) plus reservations still open at their reserved amount (charges_open_idx), on the day each charge was created, with the batch and interactive parts of each (batch: charges of batch lines). Without p_from: the current period; without p_to: through today. Null when the account (or workspace) does not exist; no days for a workspace the caller is no longer a member of. KI001 for from > to or more than 366 days.';
-- end of db/functions/kiln.get_daily_usage.sql
-- included from db/views/kiln.daily_spend.sql
-- views/kiln.daily_spend.sql: the current definition. Edit it here, and ship the change with
-- `--! include views/kiln.daily_spend.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

create or replace view kiln.daily_spend as
 SELECT day,
    account_id,
    workspace_id,
    key_id,
    model_id,
    origin,
    sum(charges)::bigint AS charges,
    sum(settled_charges)::bigint AS settled_charges,
    sum(released_charges)::bigint AS released_charges,
    sum(open_reservations)::bigint AS open_reservations,
    sum(spend_micros)::bigint AS spend_micros,
    sum(held_micros)::bigint AS held_micros,
    sum(batch_charges)::bigint AS batch_charges,
    sum(batch_settled_charges)::bigint AS batch_settled_charges,
    sum(batch_released_charges)::bigint AS batch_released_charges,
    sum(batch_open_reservations)::bigint AS batch_open_reservations,
    sum(batch_spend_micros)::bigint AS batch_spend_micros,
    sum(batch_held_micros)::bigint AS batch_held_micros
   FROM ( SELECT r.day,
            r.account_id,
            r.workspace_id,
            r.key_id,
            r.model_id,
            r.origin,
            r.charges,
            r.settled_charges,
            r.released_charges,
            0::bigint AS open_reservations,
            r.spend_micros,
            0::bigint AS held_micros,
            r.batch_charges,
            r.batch_settled_charges,
            r.batch_released_charges,
            0::bigint AS batch_open_reservations,
            r.batch_spend_micros,
            0::bigint AS batch_held_micros
           FROM kiln_private.charge_days r
        UNION ALL
         SELECT (c.created_at AT TIME ZONE 'UTC'::text)::date AS timezone,
            c.account_id,
            c.workspace_id,
            c.key_id,
            c.model_id,
            c.origin,
            1,
            0,
            0,
            1,
            0,
            c.reserved_micros,
            (c.batch_id IS NOT NULL)::integer AS int4,
            0,
            0,
            (c.batch_id IS NOT NULL)::integer AS int4,
            0,
                CASE
                    WHEN c.batch_id IS NOT NULL THEN c.reserved_micros
                    ELSE 0::bigint
                END AS "case"
           FROM kiln_private.charges c
          WHERE c.status = 'reserved'::text) d
  GROUP BY day, account_id, workspace_id, key_id, model_id, origin
 HAVING sum(charges) > 0::numeric;
comment on view kiln.daily_spend is 'Ledger per UTC day, account, workspace (null = personal budget), API key (null = not a key), model and origin (api, mcp, app, workflow): charge counts by state, settled spend and still-held reservations, in microdollars, and the batch_* part of each (charges of batch lines; the rest is interactive). Reads the kiln_private.charge_days rollup plus the open reservations (charges_open_idx), so a filter on day or account costs what it returns.';
-- end of db/views/kiln.daily_spend.sql
-- included from db/views/kiln.daily_generations.sql
-- views/kiln.daily_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include views/kiln.daily_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

create or replace view kiln.daily_generations as
 SELECT (created_at AT TIME ZONE 'UTC'::text)::date AS day,
    account_id,
    workspace_id,
    key_id,
    model_id,
    origin,
    type,
    count(*) AS generations,
    count(*) FILTER (WHERE status = 'completed'::text) AS completed,
    count(*) FILTER (WHERE status = 'failed'::text) AS failed,
    count(*) FILTER (WHERE status = ANY (ARRAY['pending'::text, 'processing'::text])) AS in_flight,
    COALESCE(sum(cost_micros), 0::numeric)::bigint AS cost_micros,
    count(*) FILTER (WHERE batch_id IS NOT NULL) AS batch_generations,
    COALESCE(sum(cost_micros) FILTER (WHERE batch_id IS NOT NULL), 0::numeric)::bigint AS batch_cost_micros
   FROM kiln_private.generations g
  GROUP BY ((created_at AT TIME ZONE 'UTC'::text)::date), account_id, workspace_id, key_id, model_id, origin, type;
comment on view kiln.daily_generations is 'Generations per UTC day (of creation), account, workspace, API key, model, origin and type: totals by outcome and billed cost in microdollars, and how many of them were batch lines (batch_generations) and their cost (batch_cost_micros).';
-- end of db/views/kiln.daily_generations.sql

-- kiln.batches: one row per batch for analysts (docs/analysts.md).
-- included from db/views/kiln.batches.sql
-- views/kiln.batches.sql: the current definition. Edit it here, and ship the change with
-- `--! include views/kiln.batches.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

create or replace view kiln.batches as
 SELECT b.id,
    b.account_id,
    b.workspace_id,
    b.key_id,
    b.status,
    b.total,
    b.completed,
    b.failed,
    b.canceled,
    b.total - b.completed - b.failed - b.canceled AS unfinished,
    b.created_at,
    b.started_at,
    b.completed_at,
    b.expires_at,
    s.charges,
    s.settled_charges,
    s.released_charges,
    s.open_reservations,
    s.spend_micros,
    s.held_micros
   FROM kiln_private.batches b
     CROSS JOIN LATERAL ( SELECT count(*) AS charges,
            count(*) FILTER (WHERE c.status = 'settled'::text) AS settled_charges,
            count(*) FILTER (WHERE c.status = 'released'::text) AS released_charges,
            count(*) FILTER (WHERE c.status = 'reserved'::text) AS open_reservations,
            COALESCE(sum(c.settled_micros), 0::numeric)::bigint AS spend_micros,
            COALESCE(sum(c.reserved_micros) FILTER (WHERE c.status = 'reserved'::text), 0::numeric)::bigint AS held_micros
           FROM kiln_private.charges c
          WHERE c.batch_id = b.id) s;
comment on view kiln.batches is 'One row per batch (POST /batches): account, workspace (null = personal budget), API key, status (in_progress, completed, canceling, canceled, expired), line counts (total, completed, failed, canceled; unfinished = not ended yet), created/started/completed/expires times, and its spend from the ledger: charges of its lines by state, settled spend and still-held reservations, in microdollars. Lines reserve when they start, so lines never started have no charge.';
-- end of db/views/kiln.batches.sql
grant select on kiln.batches to kiln_analyst;

--! split: 4-attribution.sql
-- Attribution (docs/api.md, "Attribution"): the app's own end user and its tags, stored with the
-- generation, the workflow run and the charge, never changed after creation.
alter table kiln_private.generations
  add column if not exists end_user text,
  add column if not exists metadata jsonb;
alter table kiln_private.charges
  add column if not exists end_user text,
  add column if not exists metadata jsonb;
alter table kiln_private.workflow_runs
  add column if not exists end_user text,
  add column if not exists metadata jsonb;
-- A key that requires an end user on every request that spends (POST /keys requireEndUser).
alter table kiln_private.api_keys
  add column if not exists require_end_user boolean not null default false;
comment on column kiln_private.generations.end_user is 'The request''s endUser (the app''s own user id), or for a run output its run''s; null when not given. Never changed.';
comment on column kiln_private.generations.metadata is 'The request''s metadata (at most 16 string pairs), or for a run output its run''s; null when not given. Never changed.';
comment on column kiln_private.charges.end_user is 'The end user of the generation this charge bills (kiln_private.generations.end_user).';
comment on column kiln_private.charges.metadata is 'The metadata of the generation this charge bills (kiln_private.generations.metadata).';
comment on column kiln_private.workflow_runs.end_user is 'POST /workflows/{id}/runs endUser; its outputs inherit it.';
comment on column kiln_private.workflow_runs.metadata is 'POST /workflows/{id}/runs metadata; its outputs inherit it.';
comment on column kiln_private.api_keys.require_end_user is 'Requests that spend with this key must name an endUser (KI002 otherwise).';

-- GET /generations?endUser=: a keyset page per (type, status), as generations_list_idx serves the list.
create index if not exists generations_end_user_list_idx on kiln_private.generations
  (account_id, coalesce(workspace_id, account_id), origin, end_user, type, status, created_at, id) where end_user is not null;
-- GET /generations?metadata[k]=v: containment (metadata @> {k: v}).
create index if not exists generations_metadata_idx on kiln_private.generations using gin (metadata jsonb_path_ops) where metadata is not null;

-- included from db/functions/kiln_private.generation_body.sql
-- functions/kiln_private.generation_body.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.generation_body.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.generation_body(g kiln_private.generations)
 RETURNS json
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- plpgsql, not sql: its columns are resolved when it runs, so an earlier migration may define
  -- it before a later one adds a column it reads (end_user, metadata).
  return json_build_object(
    'id', g.id,
    'status', g.status,
    'type', g.type,
    'result', case when g.status = 'completed' then g.result end,
    'error', case when g.status = 'failed' then g.error end,
    'cost_micros', g.cost_micros,
    'prompt', g.request->>'prompt',
    'batch_id', g.batch_id,
    'custom_id', g.custom_id,
    'end_user', g.end_user,
    'metadata', g.metadata);
end;
$function$;
comment on function kiln_private.generation_body(kiln_private.generations) is 'A generation as the API reads it: id, status, type, result (completed), error (failed), billed cost, the request''s prompt, for a batch line its batch_id and custom_id, and its attribution (end_user, metadata; null when not given).';
-- end of db/functions/kiln_private.generation_body.sql
-- included from db/functions/kiln_private.insert_generations.sql
-- functions/kiln_private.insert_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.insert_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.insert_generations(p_account_ids uuid[], p_key_ids uuid[], p_workspace_ids uuid[], p_origins text[], p_types text[], p_model_ids text[], p_model_versions bigint[], p_requests jsonb[], p_reserves bigint[], p_max_attempts integer, p_idem_keys text[] DEFAULT NULL::text[], p_fingerprints bytea[] DEFAULT NULL::bytea[], p_idem_ttl_seconds integer DEFAULT 86400)
 RETURNS TABLE(ord integer, id uuid, error_code text, error_message text, replayed boolean)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_column
declare
  c_err text[];
  c_msg text[];
  c_gid uuid[];
  c_charge uuid[];
  c_claim text[];
  c_lead int[];
  c_stored uuid[];
  v_idx int[];
  r_charge uuid[];
  r_err text[];
  r_msg text[];
  v_created uuid[];
  v_n int;
begin
  if coalesce(cardinality(p_account_ids), 0) = 0 then
    return;
  end if;
  -- 1. The generation rules, for the whole set.
  select array_agg(x.err order by x.i), array_agg(x.msg order by x.i), array_agg(kiln_private.uuid_v7() order by x.i)
    into c_err, c_msg, c_gid
    from (
      select s.i,
             case
               when p_types[s.i] is null or p_types[s.i] not in ('image', 'code') then 'KI001'
               when m.id is null then 'KI001'
               -- The caller priced the reservation from a cached catalog entry: refuse a stale one.
               when p_model_versions[s.i] is not null
                    and p_model_versions[s.i] <> (extract(epoch from m.updated_at) * 1000000)::bigint then 'KS001'
               when (p_types[s.i] = 'image') <> (m.category = 'image') then 'KI001'
               -- A key made with requireEndUser spends only for a named end user.
               when k.require_end_user and p_requests[s.i]->>'endUser' is null then 'KI002'
             end as err,
             case
               when p_types[s.i] is null or p_types[s.i] not in ('image', 'code') then 'type must be image or code'
               when m.id is null then format('model "%s" is not in the catalog', left(p_model_ids[s.i], 200))
               when p_model_versions[s.i] is not null
                    and p_model_versions[s.i] <> (extract(epoch from m.updated_at) * 1000000)::bigint then 'the catalog entry changed; price again'
               when (p_types[s.i] = 'image') <> (m.category = 'image') then format('model "%s" cannot produce %s output', m.id, p_types[s.i])
               when k.require_end_user and p_requests[s.i]->>'endUser' is null then 'endUser: is required: this API key requires an end user (requireEndUser)'
             end as msg
      from generate_subscripts(p_account_ids, 1) as s(i)
      left join kiln_private.models m on m.id = p_model_ids[s.i] and m.enabled
      left join kiln_private.api_keys k on k.id = p_key_ids[s.i]
    ) x;
  c_charge := array_fill(null::uuid, array[cardinality(p_account_ids)]);

  -- 1b. Idempotency keys: a replay answers what was stored even when the request would now be
  --     refused; only claimants go on (followers, replays and conflicts reserve nothing).
  if p_idem_keys is not null then
    select array_agg(c.outcome order by c.ord), array_agg(c.leader order by c.ord),
           array_agg((c.response_body->>'id')::uuid order by c.ord)
      into c_claim, c_lead, c_stored
      from kiln_private.claim_idempotency_keys(
        p_account_ids, array(select kiln_private.idempotency_operation(o) from unnest(p_origins) with ordinality u(o, i) order by i), p_idem_keys, p_fingerprints,
        array_fill(202, array[cardinality(p_account_ids)]),
        array(select jsonb_build_object('id', c_gid[s.i], 'status', 'pending') from generate_subscripts(p_account_ids, 1) as s(i) order by s.i),
        p_idem_ttl_seconds) c;
    for v_n in 1 .. cardinality(p_account_ids) loop
      if c_claim[v_n] = 'conflict' then
        c_err[v_n] := 'KD001';
        c_msg[v_n] := 'this idempotency key was already used with a different request; use a new key for a new request';
      elsif c_claim[v_n] = 'pending' then
        c_err[v_n] := 'KD002';
        c_msg[v_n] := 'a request with this idempotency key is still being processed; retry';
      elsif c_claim[v_n] in ('follower', 'replay') then
        c_err[v_n] := '-';
      end if;
    end loop;
  end if;

  -- 2. The reservations of the requests that passed (reserve_budgets' rules, its ledger rows).
  select array_agg(s.i order by s.i) into v_idx from generate_subscripts(p_account_ids, 1) as s(i) where c_err[s.i] is null;
  if v_idx is not null then
    select array_agg(r.charge_id order by r.ord), array_agg(r.error_code order by r.ord), array_agg(r.error_message order by r.ord)
      into r_charge, r_err, r_msg
      from kiln_private.reserve_budgets(
        array(select p_account_ids[i] from unnest(v_idx) as u(i)),
        array(select p_workspace_ids[i] from unnest(v_idx) as u(i)),
        array(select p_key_ids[i] from unnest(v_idx) as u(i)),
        array(select p_model_ids[i] from unnest(v_idx) as u(i)),
        array(select p_origins[i] from unnest(v_idx) as u(i)),
        array(select p_reserves[i] from unnest(v_idx) as u(i)),
        array(select c_gid[i] from unnest(v_idx) as u(i)),
        array_fill(null::uuid, array[cardinality(v_idx)]),
        array_fill(null::text, array[cardinality(v_idx)])) r;
    for v_n in 1 .. cardinality(v_idx) loop
      c_charge[v_idx[v_n]] := r_charge[v_n];
      c_err[v_idx[v_n]] := r_err[v_n];
      c_msg[v_idx[v_n]] := r_msg[v_n];
    end loop;

    -- 3. The generations that got their reservation, and their jobs.
    with gens as (
      insert into kiln_private.generations
        (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, charge_id, max_attempts, end_user, metadata)
      select c_gid[s.i], p_account_ids[s.i], p_key_ids[s.i], p_workspace_ids[s.i], p_origins[s.i], p_model_ids[s.i],
             p_types[s.i], p_requests[s.i], p_reserves[s.i], c_charge[s.i], p_max_attempts,
             p_requests[s.i]->>'endUser', nullif(p_requests[s.i]->'metadata', 'null'::jsonb)
      from generate_subscripts(p_account_ids, 1) as s(i)
      where c_charge[s.i] is not null
      returning id, created_at
    )
    select array_agg(g.id order by g.created_at) into v_created from gens g;
    perform kiln_private.enqueue_new_generations(v_created, p_max_attempts);
    -- The charges reserve_budgets made carry their generation's attribution (docs/api.md,
    -- "Attribution"); requests without any touch no charge.
    if exists (select 1 from generate_subscripts(p_account_ids, 1) as s(i)
               where c_charge[s.i] is not null and (p_requests[s.i] ? 'endUser' or p_requests[s.i] ? 'metadata')) then
      update kiln_private.charges c
        set end_user = p_requests[s.i]->>'endUser', metadata = nullif(p_requests[s.i]->'metadata', 'null'::jsonb)
        from generate_subscripts(p_account_ids, 1) as s(i)
        where c.id = c_charge[s.i] and (p_requests[s.i] ? 'endUser' or p_requests[s.i] ? 'metadata');
    end if;
  end if;

  -- 4. A refused claimant keeps nothing: its retry may succeed later (one primary-key delete each).
  if p_idem_keys is not null then
    for v_n in 1 .. cardinality(p_account_ids) loop
      if c_claim[v_n] = 'claimed' and c_charge[v_n] is null then
        delete from kiln_private.idempotency_keys
          where account_id = p_account_ids[v_n] and operation = kiln_private.idempotency_operation(p_origins[v_n]) and key = p_idem_keys[v_n];
      end if;
    end loop;
  end if;

  return query
    select s.i::int,
           case
             when c_charge[s.i] is not null then c_gid[s.i]
             when c_claim[s.i] = 'replay' then c_stored[s.i]
             when c_claim[s.i] = 'follower' and c_charge[c_lead[s.i]] is not null then c_gid[c_lead[s.i]]
           end,
           case when c_claim[s.i] = 'follower' then c_err[c_lead[s.i]] when c_err[s.i] = '-' then null else c_err[s.i] end,
           case when c_claim[s.i] = 'follower' then c_msg[c_lead[s.i]] when c_err[s.i] = '-' then null else c_msg[s.i] end,
           coalesce(c_claim[s.i] = 'replay' or (c_claim[s.i] = 'follower' and c_charge[c_lead[s.i]] is not null), false)
    from generate_subscripts(p_account_ids, 1) as s(i)
    order by s.i;
end;
$function$;
comment on function kiln_private.insert_generations(uuid[],uuid[],uuid[],text[],text[],text[],bigint[],jsonb[],bigint[],integer,text[],bytea[],integer) is 'The generation primitive: claims the requests'' idempotency keys (kiln_private.claim_idempotency_keys; a replay answers the stored id, another body KD001), checks each request''s type and model (KI001), its catalog price version (KS001) and, for a key made with requireEndUser, its endUser (KI002), reserves the worst case (kiln_private.reserve_budgets), inserts the generations with their attribution (the request''s endUser and metadata, copied onto their charges too) and queues their generation__run jobs, for a whole set at once. Each row carries the new (or replayed) id or the request''s own refusal; the others still go in.';
-- end of db/functions/kiln_private.insert_generations.sql
-- included from db/functions/kiln.create_batch.sql
-- functions/kiln.create_batch.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.create_batch.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.create_batch(p_account_id uuid, p_workspace_id uuid, p_key_id uuid, p_origin text, p_custom_ids text[], p_types text[], p_model_ids text[], p_requests jsonb[], p_reserves bigint[], p_max_attempts integer, p_idem_key text DEFAULT NULL::text, p_fingerprint bytea DEFAULT NULL::bytea, p_idem_ttl_seconds integer DEFAULT 86400, p_expires_seconds integer DEFAULT 86400)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid := kiln_private.uuid_v7();
  v_n int := coalesce(cardinality(p_custom_ids), 0);
  v_claim record;
  v_b kiln_private.batches;
  v_missing int[];
begin
  if v_n < 1 or v_n > 50000 then
    raise exception 'a batch has 1 to 50000 lines' using errcode = '22023';
  end if;
  if cardinality(p_types) <> v_n or cardinality(p_model_ids) <> v_n or cardinality(p_requests) <> v_n or cardinality(p_reserves) <> v_n then
    raise exception 'one type, model, request and reservation per line' using errcode = '22023';
  end if;
  -- A key made with requireEndUser: every line names its end user, or nothing is created.
  if exists (select 1 from kiln_private.api_keys k where k.id = p_key_id and k.require_end_user) then
    select array_agg(u.i order by u.i) into v_missing
      from unnest(p_requests) with ordinality as u(r, i) where u.r->>'endUser' is null;
    if v_missing is not null then
      return json_build_object('outcome', 'end_user_required', 'lines', v_missing);
    end if;
  end if;
  if p_idem_key is not null then
    select * into v_claim from kiln_private.claim_idempotency_keys(array[p_account_id], array['POST /batches'], array[p_idem_key],
      array[p_fingerprint], array[202], array[jsonb_build_object('id', v_id)], p_idem_ttl_seconds);
    if v_claim.outcome = 'conflict' then
      return json_build_object('outcome', 'conflict');
    elsif v_claim.outcome = 'pending' then
      return json_build_object('outcome', 'pending');
    elsif v_claim.outcome in ('replay', 'follower') then
      select * into v_b from kiln_private.batches where id = (v_claim.response_body->>'id')::uuid;
      return json_build_object('outcome', 'replayed', 'batch', kiln_private.batch_body(v_b));
    end if;
  end if;

  insert into kiln_private.batches (id, account_id, workspace_id, key_id, scope_id, total, expires_at)
    values (v_id, p_account_id, p_workspace_id, p_key_id, coalesce(p_workspace_id, p_account_id), v_n,
            now() + make_interval(secs => p_expires_seconds));
  -- Set-based: no reservation and no job yet (each line reserves when it starts).
  insert into kiln_private.generations
    (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, charge_id, max_attempts, batch_id, batch_line, custom_id,
     end_user, metadata)
  select kiln_private.uuid_v7(), p_account_id, p_key_id, p_workspace_id, p_origin, u.m, u.t, u.r, u.res, null, p_max_attempts, v_id, u.i, u.c,
         u.r->>'endUser', nullif(u.r->'metadata', 'null'::jsonb)
  from unnest(p_custom_ids, p_types, p_model_ids, p_requests, p_reserves) with ordinality as u(c, t, m, r, res, i);
  perform kiln_private.dispatch_batches(least(v_n, 1000));
  select * into v_b from kiln_private.batches where id = v_id;
  return json_build_object('outcome', 'created', 'batch', kiln_private.batch_body(v_b));
end;
$function$;
comment on function kiln.create_batch(uuid,uuid,uuid,text,text[],text[],text[],jsonb[],bigint[],integer,text,bytea,integer,integer) is 'POST /batches after every line passed validation: the batch and one pending generation per line (batch_line from 1, custom_id; reserved_micros its worst case, reserved only when it starts), in one transaction, then queues the first lines (kiln_private.dispatch_batches). Each line keeps its request''s attribution (endUser, metadata); a key made with requireEndUser gets outcome end_user_required with the lines (1-based) that lack an endUser, and nothing is created. With an Idempotency-Key: outcome replayed with the stored batch, conflict (another body) or pending (still in flight); else created.';
-- end of db/functions/kiln.create_batch.sql
-- included from db/functions/kiln.reserve_generation.sql
-- functions/kiln.reserve_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.reserve_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.reserve_generation(p_id uuid, p_amount_micros bigint)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
  v_charge kiln_private.charges;
begin
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if not found or v_gen.status <> 'processing' then
    return json_build_object('ok', false);
  end if;
  if v_gen.charge_id is not null then
    -- Idempotent: a retry or takeover keeps the first reservation.
    return json_build_object('ok', true, 'reserved_micros', v_gen.reserved_micros);
  end if;
  -- Raises KQ001 / KP001 when the budget cannot cover the worst case.
  v_charge := kiln.reserve_budget(v_gen.account_id, v_gen.workspace_id, v_gen.key_id, v_gen.model_id, v_gen.origin,
                                  p_amount_micros, v_gen.id, v_gen.run_id, v_gen.output_node_id);
  if v_gen.batch_id is not null then
    -- A batch line's charge names its batch: usage and the analysts' views show batch spend apart.
    update kiln_private.charges set batch_id = v_gen.batch_id where id = v_charge.id;
  end if;
  update kiln_private.generations
    set charge_id = v_charge.id, reserved_micros = v_charge.reserved_micros, updated_at = now()
    where id = p_id;
  -- The charge carries the generation's attribution (docs/api.md, "Attribution").
  if v_gen.end_user is not null or v_gen.metadata is not null then
    update kiln_private.charges set end_user = v_gen.end_user, metadata = v_gen.metadata where id = v_charge.id;
  end if;
  return json_build_object('ok', true, 'reserved_micros', v_charge.reserved_micros);
end;
$function$;
comment on function kiln.reserve_generation(uuid,bigint) is 'Reserves the worst-case cost of a processing generation created without a reservation (a run output, priced once its inputs are known; a batch line, whose charge gets its batch_id) on its budget pool, once (idempotent); the charge carries the generation''s end_user and metadata. Raises KQ001 or KP001 when the budget cannot cover it.';
-- end of db/functions/kiln.reserve_generation.sql
drop function if exists kiln.start_workflow_run(uuid, uuid, uuid, text, uuid, jsonb, jsonb, integer, integer);
-- included from db/functions/kiln.start_workflow_run.sql
-- functions/kiln.start_workflow_run.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.start_workflow_run.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.start_workflow_run(p_account_id uuid, p_key_id uuid, p_workspace_id uuid, p_origin text, p_workflow_id uuid, p_snapshot jsonb, p_outputs jsonb, p_window_seconds integer, p_max_attempts integer, p_end_user text DEFAULT NULL::text, p_metadata jsonb DEFAULT NULL::jsonb)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_id uuid := gen_random_uuid();
  v_deadline timestamptz := now() + make_interval(secs => p_window_seconds);
  v_skipped int;
  v_ready uuid[];
begin
  -- The workflow's owner is a billing scope (kiln_private.workflow_scopes); a deleted one is not runnable.
  perform 1 from kiln_private.workflows
    where id = p_workflow_id and deleted_at is null and scope_id = any (kiln_private.workflow_scopes(p_account_id, p_workspace_id));
  if not found then
    raise exception 'workflow not found' using errcode = 'KN001';
  end if;
  -- A key made with requireEndUser spends only for a named end user.
  if p_end_user is null and exists (select 1 from kiln_private.api_keys k where k.id = p_key_id and k.require_end_user) then
    raise exception 'endUser: is required: this API key requires an end user (requireEndUser)' using errcode = 'KI002';
  end if;
  -- Refuse a run that could not charge a single output (every output reserves as it starts).
  perform kiln_private.check_run_budget(p_account_id, p_workspace_id);

  insert into kiln_private.workflow_runs
    (id, workflow_id, account_id, key_id, workspace_id, origin, snapshot, total, deadline, window_seconds, max_attempts, end_user, metadata)
  values
    (v_id, p_workflow_id, p_account_id, p_key_id, p_workspace_id, p_origin, p_snapshot,
     jsonb_array_length(p_outputs), v_deadline, p_window_seconds, p_max_attempts, p_end_user, p_metadata);

  with units as (
    select u.*, case when u.type = 'video' then null else kiln_private.uuid_v7() end as gen_id
    from jsonb_to_recordset(p_outputs) as u(output text, prompt text, ordinal int, type text, spec jsonb, refs text[], deps int, dependents text[])
  ), gens as (
    insert into kiln_private.generations
      (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, max_attempts, run_id, output_node_id, end_user, metadata)
    select u.gen_id, p_account_id, p_key_id, p_workspace_id, 'workflow', coalesce(u.spec->'model'->>'id', ''),
           case when u.type = 'image' then 'image' else 'code' end, u.spec, 0, p_max_attempts, v_id, u.output, p_end_user, p_metadata
    from units u where u.gen_id is not null
    returning id
  )
  insert into kiln_private.workflow_run_outputs
    (run_id, output_node_id, prompt_node_id, account_id, ordinal, type, spec, refs, pending_deps, dependents, status, finished_at, generation_id)
  select v_id, u.output, u.prompt, p_account_id, u.ordinal, u.type, u.spec, u.refs, u.deps, u.dependents,
         case when u.type = 'video' then 'skipped' when u.deps = 0 then 'queued' else 'waiting' end,
         case when u.type = 'video' then clock_timestamp() end,
         (select g.id from gens g where g.id = u.gen_id)
  from units u;

  select count(*) filter (where status = 'skipped'), array_agg(generation_id order by ordinal) filter (where status = 'queued')
    into v_skipped, v_ready
    from kiln_private.workflow_run_outputs where run_id = v_id;

  perform kiln_private.enqueue_generations(v_ready, p_max_attempts);
  perform kiln_private.schedule_run_deadline(v_id, v_deadline);
  -- Skipped (video) outputs settle at once; a run with nothing to execute completes here.
  perform kiln_private.note_workflow_progress(v_id, v_skipped);
  return v_id;
exception
  when check_violation or not_null_violation or invalid_text_representation or unique_violation then
    raise exception 'invalid run plan' using errcode = 'KI001';
end;
$function$;
comment on function kiln.start_workflow_run(uuid,uuid,uuid,text,uuid,jsonb,jsonb,integer,integer,text,jsonb) is 'Starts a run in one transaction: checks that the workflow is the caller''s billing scope''s and not deleted, that the caller can be charged (KN001, KQ001, KP001) and that a key made with requireEndUser names an end user (KI002), stores the run''s attribution (p_end_user, p_metadata: its outputs inherit them), stores the snapshot, the outputs with their dependency counts and one generation (origin workflow) per output, and queues the ready ones plus the run-window check.';
-- end of db/functions/kiln.start_workflow_run.sql
-- included from db/functions/kiln.retry_workflow_run.sql
-- functions/kiln.retry_workflow_run.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.retry_workflow_run.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.retry_workflow_run(p_account_id uuid, p_key_id uuid, p_workspace_id uuid, p_origin text, p_workflow_id uuid, p_run_id uuid, p_window_seconds integer, p_max_attempts integer)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_old kiln_private.workflow_runs;
  v_id uuid := gen_random_uuid();
  v_deadline timestamptz := now() + make_interval(secs => p_window_seconds);
  v_retry uuid;
  v_out record;
  v_settled int;
  v_ready uuid[];
begin
  select * into v_old from kiln_private.workflow_runs
    where id = p_run_id and account_id = p_account_id and workflow_id = p_workflow_id
    for update;
  if not found then
    raise exception 'workflow run not found' using errcode = 'KN001';
  end if;
  -- A retry is a new run: a deleted workflow runs nothing new (its runs stay readable).
  perform 1 from kiln_private.workflows where id = p_workflow_id and deleted_at is null;
  if not found then
    raise exception 'workflow not found' using errcode = 'KN001';
  end if;
  if v_old.status <> 'failed' then
    raise exception 'only a failed run can be retried; this run is %', v_old.status using errcode = 'KT001';
  end if;
  select id into v_retry from kiln_private.workflow_runs where retry_of = p_run_id;
  if found then
    raise exception 'this run was already retried by run %', v_retry using errcode = 'KT001';
  end if;
  if v_old.end_user is null and exists (select 1 from kiln_private.api_keys k where k.id = p_key_id and k.require_end_user) then
    raise exception 'endUser: is required: this API key requires an end user (requireEndUser), and the run it retries has none' using errcode = 'KI002';
  end if;
  perform kiln_private.check_run_budget(p_account_id, p_workspace_id);

  -- Outputs of the failed run still in flight would be run (and charged) twice: cancel them
  -- (released, their calls aborted); the new run runs them again.
  for v_out in
    select o.generation_id from kiln_private.workflow_run_outputs o
      where o.run_id = p_run_id and o.status in ('queued', 'running') and o.generation_id is not null
      order by o.ordinal
  loop
    perform kiln_private.cancel_generation(v_out.generation_id);
  end loop;

  insert into kiln_private.workflow_runs
    (id, workflow_id, account_id, key_id, workspace_id, origin, snapshot, total, deadline, window_seconds, max_attempts, retry_of,
     end_user, metadata)
  values
    (v_id, v_old.workflow_id, p_account_id, p_key_id, p_workspace_id, p_origin, v_old.snapshot, v_old.total,
     v_deadline, p_window_seconds, p_max_attempts, p_run_id, v_old.end_user, v_old.metadata);

  -- Completed (and skipped) outputs are reused: their results copied, nothing run or charged
  -- again. Every other output gets a new generation and waits for those of its inputs that run.
  with old as (
    select o.*, o.status in ('completed', 'skipped') as keep
    from kiln_private.workflow_run_outputs o where o.run_id = p_run_id
  ), plan as (
    select o.*, case when o.keep then null else kiln_private.uuid_v7() end as gen_id,
           (select count(*)::int from old u where u.output_node_id = any (o.refs) and not u.keep) as deps
    from old o
  ), gens as (
    insert into kiln_private.generations
      (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, max_attempts, run_id, output_node_id, end_user, metadata)
    select p.gen_id, p_account_id, p_key_id, p_workspace_id, 'workflow', coalesce(p.spec->'model'->>'id', ''),
           case when p.type = 'image' then 'image' else 'code' end, p.spec, 0, p_max_attempts, v_id, p.output_node_id, v_old.end_user, v_old.metadata
    from plan p where p.gen_id is not null
    returning id
  )
  insert into kiln_private.workflow_run_outputs
    (run_id, output_node_id, prompt_node_id, account_id, ordinal, type, spec, refs, pending_deps, dependents,
     status, result, cost_micros, finished_at, generation_id)
  select v_id, p.output_node_id, p.prompt_node_id, p_account_id, p.ordinal, p.type, p.spec, p.refs,
         case when p.keep then 0 else p.deps end, p.dependents,
         case when p.keep then p.status when p.deps = 0 then 'queued' else 'waiting' end,
         case when p.keep then p.result end,
         case when p.status = 'completed' then 0 end,
         case when p.keep then clock_timestamp() end,
         (select g.id from gens g where g.id = p.gen_id)
  from plan p;

  select count(*) filter (where status in ('completed', 'skipped')),
         array_agg(generation_id order by ordinal) filter (where status = 'queued')
    into v_settled, v_ready
    from kiln_private.workflow_run_outputs where run_id = v_id;
  perform kiln_private.enqueue_generations(v_ready, p_max_attempts);
  perform kiln_private.schedule_run_deadline(v_id, v_deadline);
  perform kiln_private.note_workflow_progress(v_id, v_settled);
  return v_id;
end;
$function$;
comment on function kiln.retry_workflow_run(uuid,uuid,uuid,text,uuid,uuid,integer,integer) is 'Retries a failed run of the account''s workflow as a new run (retry_of = it) on the same snapshot, billed to the caller: completed and skipped outputs are reused (results copied, cost 0, never run or charged again), outputs of the old run still in flight are canceled, and every other output runs again once the inputs it reads are settled; the new run and its outputs keep the old run''s attribution (end_user, metadata). KN001 unknown run or deleted workflow, KT001 not failed or already retried, KQ001 / KP001 budget, KI002 a key made with requireEndUser retrying a run without an end user.';
-- end of db/functions/kiln.retry_workflow_run.sql
-- included from db/functions/kiln.get_workflow_run.sql
-- functions/kiln.get_workflow_run.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_workflow_run.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_workflow_run(p_account_id uuid, p_workflow_id uuid, p_run_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'id', r.id,
    'workflowId', r.workflow_id,
    'status', r.status,
    'total', r.total,
    'settled', r.settled,
    'error', r.error,
    'createdAt', to_char(r.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'completedAt', to_char(r.completed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'retryOf', r.retry_of,
    'endUser', r.end_user,
    'metadata', r.metadata,
    -- Past its window with outputs never started: the reader runs the window check first.
    'expired', r.status in ('pending', 'running') and now() > r.deadline and exists (
      select 1 from kiln_private.workflow_run_outputs o
      where o.run_id = r.id and (o.status = 'waiting' or (o.status = 'queued' and o.started_at is null))),
    'results', (
      select coalesce(json_agg(json_build_object(
               'promptNodeId', o.prompt_node_id,
               'outputNodeId', o.output_node_id,
               'type', o.type,
               'status', o.status,
               'label', o.spec->>'label',
               'platform', o.spec->>'platform',
               'path', o.result->>'path',
               'mediaType', o.result->>'mediaType',
               'code', o.result->>'code',
               'error', o.error,
               'costMicros', coalesce(o.cost_micros, 0),
               'model', o.result->>'model',
               'expiredAt', o.result->>'expiredAt')
             order by o.finished_at, o.ordinal), '[]'::json)
      from kiln_private.workflow_run_outputs o
      where o.run_id = r.id and o.status in ('completed', 'failed', 'skipped')))
  from kiln_private.workflow_runs r
  where r.id = p_run_id and r.account_id = p_account_id and r.workflow_id = p_workflow_id;
$function$;
comment on function kiln.get_workflow_run(uuid,uuid,uuid) is 'A run''s state (with the run it retried, if any, and its attribution: endUser, metadata) and its settled results (in settling order, with expiredAt once retention removed an image) for its owner, when it belongs to that workflow; null otherwise.';
-- end of db/functions/kiln.get_workflow_run.sql
drop function if exists kiln.list_generations_for_keys(bytea[], integer, text, integer[], timestamptz[], uuid[], text[], text[], text[], timestamptz[]);
drop function if exists kiln.list_generations_for_callers(uuid[], uuid[], text, integer[], timestamptz[], uuid[], text[], text[], text[], timestamptz[]);
drop function if exists kiln.list_generations(uuid, uuid, text, integer, timestamptz, uuid, text[], text[], text, timestamptz);
drop function if exists kiln.list_batch_generations(uuid, uuid, integer, timestamptz, uuid, text[], text[], text, timestamptz);
-- included from db/functions/kiln.list_generations.sql
-- functions/kiln.list_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_generations(p_account_id uuid, p_workspace_id uuid, p_origin text, p_limit integer, p_before_at timestamp with time zone, p_before_id uuid, p_statuses text[], p_types text[], p_model_id text, p_since timestamp with time zone, p_end_user text DEFAULT NULL::text, p_metadata jsonb DEFAULT NULL::jsonb)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
declare
  v_pool uuid := coalesce(p_workspace_id, p_account_id);
  v_limit int := least(greatest(coalesce(p_limit, 20), 1), 100);
  v_at timestamptz := coalesce(p_before_at, 'infinity');
  v_id uuid := coalesce(p_before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
  v_since timestamptz := coalesce(p_since, '-infinity');
  v_statuses text[] := coalesce(p_statuses, array['pending', 'processing', 'completed', 'failed']);
  v_types text[] := coalesce(p_types, array['image', 'code']);
  v_ids uuid[];
  v_next json;
  v_data json;
begin
  if p_end_user is not null then
    -- One end user's: generations_end_user_list_idx, a keyset probe per (type, status).
    select array_agg(h.id order by h.created_at desc, h.id desc) into v_ids
    from (select h.created_at, h.id
          from unnest(v_types) t(type) cross join unnest(v_statuses) s(status)
          cross join lateral (
            select g.created_at, g.id from kiln_private.generations g
            where g.account_id = p_account_id and coalesce(g.workspace_id, g.account_id) = v_pool
              and g.origin = p_origin and g.end_user = p_end_user and g.type = t.type and g.status = s.status
              and (g.created_at, g.id) < (v_at, v_id) and g.created_at >= v_since
              and (p_model_id is null or g.model_id = p_model_id)
              and (p_metadata is null or g.metadata @> p_metadata)
            order by g.created_at desc, g.id desc
            limit v_limit + 1) h
          order by h.created_at desc, h.id desc
          limit v_limit + 1) h;
  elsif p_metadata is not null then
    -- Tagged ones: containment through generations_metadata_idx.
    select array_agg(h.id order by h.created_at desc, h.id desc) into v_ids
    from (select g.created_at, g.id from kiln_private.generations g
          where g.metadata @> p_metadata
            and g.account_id = p_account_id and coalesce(g.workspace_id, g.account_id) = v_pool
            and g.origin = p_origin and g.type = any (v_types) and g.status = any (v_statuses)
            and (g.created_at, g.id) < (v_at, v_id) and g.created_at >= v_since
            and (p_model_id is null or g.model_id = p_model_id)
          order by g.created_at desc, g.id desc
          limit v_limit + 1) h;
  elsif p_model_id is null then
    select array_agg(h.id order by h.created_at desc, h.id desc) into v_ids
    from (select h.created_at, h.id
          from unnest(v_types) t(type) cross join unnest(v_statuses) s(status)
          cross join lateral (
            select g.created_at, g.id from kiln_private.generations g
            where g.account_id = p_account_id and coalesce(g.workspace_id, g.account_id) = v_pool
              and g.origin = p_origin and g.type = t.type and g.status = s.status
              and (g.created_at, g.id) < (v_at, v_id) and g.created_at >= v_since
            order by g.created_at desc, g.id desc
            limit v_limit + 1) h
          order by h.created_at desc, h.id desc
          limit v_limit + 1) h;
  else
    select array_agg(h.id order by h.created_at desc, h.id desc) into v_ids
    from (select h.created_at, h.id
          from unnest(v_types) t(type) cross join unnest(v_statuses) s(status)
          cross join lateral (
            select g.created_at, g.id from kiln_private.generations g
            where g.account_id = p_account_id and coalesce(g.workspace_id, g.account_id) = v_pool
              and g.origin = p_origin and g.model_id = p_model_id and g.type = t.type and g.status = s.status
              and (g.created_at, g.id) < (v_at, v_id) and g.created_at >= v_since
            order by g.created_at desc, g.id desc
            limit v_limit + 1) h
          order by h.created_at desc, h.id desc
          limit v_limit + 1) h;
  end if;
  v_ids := coalesce(v_ids, '{}');
  select coalesce(json_agg(kiln_private.generation_body(g) order by g.created_at desc, g.id desc), '[]'),
         -- More than a page: the last item of the page is where the next one starts.
         case when cardinality(v_ids) > v_limit then
           (select json_build_object('at', (extract(epoch from l.created_at) * 1000000)::bigint::text, 'id', l.id)
            from kiln_private.generations l where l.id = v_ids[v_limit]) end
    into v_data, v_next
    from kiln_private.generations g
    where g.id = any (v_ids[1:v_limit]);
  return json_build_object('data', v_data, 'next', v_next);
end;
$function$;
comment on function kiln.list_generations(uuid,uuid,text,integer,timestamp with time zone,uuid,text[],text[],text,timestamp with time zone,text,jsonb) is 'A page of an account''s generations in one billing scope (p_workspace_id null = the personal budget) created through p_origin, newest first, before (p_before_at, p_before_id) (keyset), filtered by statuses, types, model, created at or after p_since, end user (p_end_user) and metadata containing every pair of p_metadata (null = any): {data: [kiln_private.generation_body], next: {at: epoch microseconds, id} | null}. At most 2 × 4 index probes of a page each.';
-- end of db/functions/kiln.list_generations.sql
-- included from db/functions/kiln.list_generations_for_keys.sql
-- functions/kiln.list_generations_for_keys.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_generations_for_keys.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_generations_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_origin text, p_limits integer[], p_before_ats timestamp with time zone[], p_before_ids uuid[], p_statuses text[], p_types text[], p_model_ids text[], p_sinces timestamp with time zone[], p_end_users text[] DEFAULT NULL::text[], p_metadata jsonb[] DEFAULT NULL::jsonb[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  -- Per request, statuses and types come as comma-separated lists (null = any); an end user and
  -- metadata pairs filter (null = any).
  select r.*, case when r.status = 'ok' then kiln.list_generations(
           r.account_id, r.workspace_id, p_origin, p_limits[r.ord], p_before_ats[r.ord], p_before_ids[r.ord],
           string_to_array(p_statuses[r.ord], ','), string_to_array(p_types[r.ord], ','), p_model_ids[r.ord], p_sinces[r.ord],
           p_end_users[r.ord], p_metadata[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.list_generations_for_keys(bytea[],integer,text,integer[],timestamp with time zone[],uuid[],text[],text[],text[],timestamp with time zone[],text[],jsonb[]) is 'GET /generations for a batch in one transaction: authorizes each key (read scope, the per-key read bucket at p_read_rpm and the key''s own rpm) and, when admitted, returns that page of the key''s account''s generations in the key''s billing scope created through p_origin (kiln.list_generations).';
-- end of db/functions/kiln.list_generations_for_keys.sql
-- included from db/functions/kiln.list_generations_for_callers.sql
-- functions/kiln.list_generations_for_callers.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_generations_for_callers.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_generations_for_callers(p_account_ids uuid[], p_workspace_ids uuid[], p_origin text, p_limits integer[], p_before_ats timestamp with time zone[], p_before_ids uuid[], p_statuses text[], p_types text[], p_model_ids text[], p_sinces timestamp with time zone[], p_end_users text[] DEFAULT NULL::text[], p_metadata jsonb[] DEFAULT NULL::jsonb[])
 RETURNS TABLE(ord integer, body json)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- Per request, statuses and types come as comma-separated lists (null = any); an end user and
  -- metadata pairs filter (null = any).
  select c.ord::int, kiln.list_generations(
           c.account_id, p_workspace_ids[c.ord], p_origin, p_limits[c.ord], p_before_ats[c.ord], p_before_ids[c.ord],
           string_to_array(p_statuses[c.ord], ','), string_to_array(p_types[c.ord], ','), p_model_ids[c.ord], p_sinces[c.ord],
           p_end_users[c.ord], p_metadata[c.ord])
  from unnest(p_account_ids) with ordinality c(account_id, ord);
$function$;
comment on function kiln.list_generations_for_callers(uuid[],uuid[],text,integer[],timestamp with time zone[],uuid[],text[],text[],text[],timestamp with time zone[],text[],jsonb[]) is 'GET /generations for a batch of callers already authorized (account, billing scope): the page of each (kiln.list_generations), by 1-based ord. Read-only: runs on a streaming replica.';
-- end of db/functions/kiln.list_generations_for_callers.sql
-- included from db/functions/kiln.list_batch_generations.sql
-- functions/kiln.list_batch_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_batch_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_batch_generations(p_account_id uuid, p_batch_id uuid, p_limit integer, p_before_at timestamp with time zone, p_before_id uuid, p_statuses text[], p_types text[], p_model_id text, p_since timestamp with time zone, p_end_user text DEFAULT NULL::text, p_metadata jsonb DEFAULT NULL::jsonb)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_limit int := least(greatest(coalesce(p_limit, 20), 1), 100);
  v_at timestamptz := coalesce(p_before_at, 'infinity');
  v_id uuid := coalesce(p_before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
  v_line int;
  v_ids uuid[];
  v_next json;
  v_data json;
begin
  -- Only the account's own batch: another account's id lists nothing.
  if not exists (select 1 from kiln_private.batches b where b.id = p_batch_id and b.account_id = p_account_id) then
    return json_build_object('data', '[]'::json, 'next', null);
  end if;
  -- Newest first is last line first (a batch's lines share their created_at); the cursor's id
  -- names the line to go on after.
  if p_before_id is not null then
    select g.batch_line into v_line from kiln_private.generations g where g.id = p_before_id and g.batch_id = p_batch_id;
  end if;
  v_line := coalesce(v_line, 2147483647);
  select array_agg(h.id order by h.created_at desc, h.batch_line desc) into v_ids
  from (select g.created_at, g.batch_line, g.id from kiln_private.generations g
        where g.batch_id = p_batch_id and (g.created_at, g.batch_line) < (v_at, v_line)
          and (p_statuses is null or g.status = any (p_statuses))
          and (p_types is null or g.type = any (p_types))
          and (p_model_id is null or g.model_id = p_model_id)
          and (p_since is null or g.created_at >= p_since)
          and (p_end_user is null or g.end_user = p_end_user)
          and (p_metadata is null or g.metadata @> p_metadata)
        order by g.created_at desc, g.batch_line desc
        limit v_limit + 1) h;
  v_ids := coalesce(v_ids, '{}');
  select coalesce(json_agg(kiln_private.generation_body(g) order by g.created_at desc, g.batch_line desc), '[]'),
         case when cardinality(v_ids) > v_limit then
           (select json_build_object('at', (extract(epoch from l.created_at) * 1000000)::bigint::text, 'id', l.id)
            from kiln_private.generations l where l.id = v_ids[v_limit]) end
    into v_data, v_next
    from kiln_private.generations g
    where g.id = any (v_ids[1:v_limit]);
  return json_build_object('data', v_data, 'next', v_next);
end;
$function$;
comment on function kiln.list_batch_generations(uuid,uuid,integer,timestamp with time zone,uuid,text[],text[],text,timestamp with time zone,text,jsonb) is 'GET /generations?batchId=: a page of the lines of the account''s batch, last line first (keyset on created_at and the cursor''s line), with GET /generations'' other filters (end user and metadata included): {data: [kiln_private.generation_body], next}.';
-- end of db/functions/kiln.list_batch_generations.sql
drop function if exists kiln.create_key(uuid, uuid, text[], bytea, text, text, text[], integer, bigint, timestamptz);
-- included from db/functions/kiln.create_key.sql
-- functions/kiln.create_key.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.create_key.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.create_key(p_account_id uuid, p_workspace_id uuid, p_caller_scopes text[], p_key_hash bytea, p_display_prefix text, p_name text, p_scopes text[], p_rpm integer, p_budget_micros bigint, p_expires_at timestamp with time zone, p_require_end_user boolean DEFAULT false)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_key kiln_private.api_keys;
  v_extra text[];
begin
  select array_agg(s) into v_extra from unnest(p_scopes) s where not (s = any (coalesce(p_caller_scopes, '{}')));
  if v_extra is not null then
    raise exception 'a key cannot have scopes its creator lacks: %', array_to_string(v_extra, ', ') using errcode = 'KF001';
  end if;
  if p_expires_at is not null and p_expires_at <= now() then
    raise exception 'expiresAt must be in the future' using errcode = 'KI001';
  end if;
  perform 1 from kiln_private.accounts where id = p_account_id;
  if not found then
    raise exception 'account not found' using errcode = 'KN001';
  end if;
  if p_workspace_id is not null then
    -- Only a current owner or admin may bind a key to the workspace's pool.
    perform 1 from kiln_private.workspace_members
      where workspace_id = p_workspace_id and account_id = p_account_id
        and left_at is null and role in ('owner', 'admin');
    if not found then
      raise exception 'only a workspace owner or admin may create keys billed to it' using errcode = 'KF001';
    end if;
  end if;
  insert into kiln_private.api_keys (account_id, key_hash, display_prefix, scopes, rpm, workspace_id, name, budget_micros, expires_at, require_end_user)
    values (p_account_id, p_key_hash, p_display_prefix, p_scopes, p_rpm, p_workspace_id, p_name, p_budget_micros, p_expires_at,
            coalesce(p_require_end_user, false))
    returning * into v_key;
  return kiln_private.key_json(v_key, 0);
exception
  when check_violation then
    raise exception 'invalid key settings (scopes: one or more of read, write, keys, admin; rpm and budgetMicros positive; name up to 200 characters)' using errcode = 'KI001';
end;
$function$;
comment on function kiln.create_key(uuid,uuid,text[],bytea,text,text,text[],integer,bigint,timestamp with time zone,boolean) is 'POST /keys: a new key in the caller''s billing scope, its scopes within the caller''s (KF001), with an optional rpm, own budget per period and expiry, and whether its requests that spend must name an end user (p_require_end_user). Returns its list entry.';
-- end of db/functions/kiln.create_key.sql
-- included from db/functions/kiln_private.key_json.sql
-- functions/kiln_private.key_json.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.key_json.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.key_json(k kiln_private.api_keys, p_used bigint)
 RETURNS json
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- liveSecrets: the current secret while the key is live, plus the older ones still in their
  -- grace; graceEndsAt: when the last older one stops working (rounded up to the second).
  select json_build_object(
    'id', k.id, 'name', k.name, 'prefix', k.display_prefix, 'scopes', k.scopes, 'rpm', k.rpm,
    'workspaceId', k.workspace_id, 'budgetMicros', k.budget_micros, 'usedMicros', coalesce(p_used, 0),
    'createdAt', to_char(k.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'lastUsedAt', to_char(k.last_used_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'expiresAt', to_char(k.expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'revokedAt', to_char(k.revoked_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'requireEndUser', k.require_end_user,
    'liveSecrets', case when g.live then 1 + g.n else 0 end,
    'graceEndsAt', case when g.live and g.n > 0 then
      to_char((date_trunc('second', g.until) + case when g.until > date_trunc('second', g.until) then interval '1 second' else interval '0' end)
              at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') end)
  from (select k.revoked_at is null and (k.expires_at is null or k.expires_at > now()) as live,
               count(x.key_hash)::int as n, max(x.expires_at) as until
        from kiln_private.api_key_grace x where x.key_id = k.id and x.expires_at > now()) g;
$function$;
comment on function kiln_private.key_json(kiln_private.api_keys,bigint) is 'A key as GET /keys lists it (never its hash or a secret), with requireEndUser, liveSecrets (the current secret and older ones in their grace; 0 once revoked or expired) and graceEndsAt (when the last older secret stops working; null when none).';
-- end of db/functions/kiln_private.key_json.sql
-- included from db/functions/kiln_private.tg_api_keys__audit.sql
-- functions/kiln_private.tg_api_keys__audit.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_api_keys__audit.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_api_keys__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_scope uuid := coalesce(new.workspace_id, new.account_id);
  v_noun text := new.kind;
begin
  if tg_op = 'INSERT' then
    if new.kind = 'session' then
      -- A sign-in acts as the session it makes.
      perform set_config('kiln.actor', (coalesce(nullif(current_setting('kiln.actor', true), '')::jsonb, '{}')
        || jsonb_build_object('type', 'session', 'id', new.id))::text, true);
    end if;
    perform kiln_private.audit(v_scope, v_noun || '.created', v_noun, new.id::text,
      case when new.kind = 'key' then jsonb_build_object('name', new.name, 'prefix', new.display_prefix, 'scopes', new.scopes,
             'rpm', new.rpm, 'budgetMicros', new.budget_micros, 'expiresAt', new.expires_at, 'workspaceId', new.workspace_id,
             'requireEndUser', new.require_end_user)
           else jsonb_build_object('workspaceId', new.workspace_id, 'expiresAt', new.expires_at) end);
    return null;
  end if;
  if old.revoked_at is null and new.revoked_at is not null then
    perform kiln_private.audit(v_scope, case when new.kind = 'key' then 'key.revoked' else 'session.deleted' end, v_noun, new.id::text,
      jsonb_build_object('prefix', new.display_prefix));
  end if;
  if old.key_hash is distinct from new.key_hash then
    perform kiln_private.audit(v_scope, v_noun || '.rotated', v_noun, new.id::text,
      jsonb_build_object('prefix', new.display_prefix, 'previousPrefix', old.display_prefix,
        'previousValidUntil', (select max(g.expires_at) from kiln_private.api_key_grace g where g.key_id = new.id and g.key_hash = old.key_hash)));
  end if;
  if new.kind = 'key' and (old.scopes, old.rpm, old.budget_micros, old.expires_at, old.name, old.workspace_id, old.require_end_user)
       is distinct from (new.scopes, new.rpm, new.budget_micros, new.expires_at, new.name, new.workspace_id, new.require_end_user) then
    perform kiln_private.audit(v_scope, 'key.updated', 'key', new.id::text, jsonb_build_object(
      'scopes', new.scopes, 'rpm', new.rpm, 'budgetMicros', new.budget_micros, 'expiresAt', new.expires_at, 'name', new.name,
      'workspaceId', new.workspace_id, 'requireEndUser', new.require_end_user));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_api_keys__audit() is 'Trigger: key.created / rotated / revoked / updated and session.created / deleted (sign-in and sign-out) in the audit log.';
-- end of db/functions/kiln_private.tg_api_keys__audit.sql
-- Analysts read attribution per generation (docs/analysts.md); new columns go last, grants stay.
-- included from db/views/kiln.generation_timings.sql
-- views/kiln.generation_timings.sql: the current definition. Edit it here, and ship the change with
-- `--! include views/kiln.generation_timings.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

create or replace view kiln.generation_timings as
 SELECT id,
    (created_at AT TIME ZONE 'UTC'::text)::date AS day,
    account_id,
    workspace_id,
    key_id,
    model_id,
    origin,
    type,
    status,
    attempts,
    cost_micros,
    created_at,
    round(EXTRACT(epoch FROM started_at - created_at) * 1000::numeric) AS queued_ms,
    round(EXTRACT(epoch FROM finished_at - started_at) * 1000::numeric) AS processing_ms,
    max_attempts,
    crashes,
    crash_streak,
    last_error,
    error,
    end_user,
    metadata
   FROM kiln_private.generations g;
comment on view kiln.generation_timings is 'One row per generation with its queued (created → first started) and processing (started → finished) times in whole milliseconds, for percentiles over any window (null while not yet started or finished), and what its executions went through: attempts (executions that ran to an end, of max_attempts), crashes (executions cut off by a dead worker and taken over; crash_streak in a row), the last transient error and the final error; end_user and metadata: the request''s attribution (null when not given).';
-- end of db/views/kiln.generation_timings.sql
