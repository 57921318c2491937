--! Previous: sha1:cc5a8fa4088e3f460b124afbfc7f0998739c80e7
--! Hash: sha1:eb28f473b3db0023a53c7063cab973692653fb29
--! Message: client control

--! split: 1-idempotency.sql
-- Idempotency-Key (issue #12): the first accepted request of an (account, operation, key) is
-- stored with a fingerprint of its body and the response it got; a repeat with the same body
-- answers that response, a repeat with another body is refused (KD001). The claim is an insert
-- in the transaction that creates the work, so the unique key is the ground truth: a duplicate in
-- the same set follows its leader, a duplicate in another transaction (another batch, another API
-- process) waits on the leader's uncommitted row and then reads the committed answer. A refused
-- request deletes its claim in its own transaction: nothing of it is kept, so a retry may succeed.

create table if not exists kiln_private.idempotency_keys (
  account_id uuid not null,
  -- What the key was used for: 'POST /generations' or 'POST /workflows/<id>/runs'.
  operation text not null,
  key text not null check (char_length(key) between 1 and 255),
  -- SHA-256 of the request's canonical form (src/http/idempotency.ts).
  fingerprint bytea not null check (length(fingerprint) = 32),
  -- The stored answer; null only inside the claiming transaction of a run (recorded before commit).
  response_status smallint,
  response_body jsonb,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (account_id, operation, key)
);
-- No foreign key to accounts: its check would lock the account row on every keyed POST; the rows
-- of a deleted account expire like any other.
comment on table kiln_private.idempotency_keys is
  'Idempotency-Key records: per account and operation, the fingerprint of the first accepted request and the response it got, until expires_at.';
-- The purge reads the expired end of this index. (Not BRIN: purged pages are reused by new rows,
-- so block ranges would soon span every expiry and the purge would read the whole table.)
create index if not exists idempotency_keys_expires_idx on kiln_private.idempotency_keys (expires_at);

create or replace function kiln_private.claim_idempotency_keys(
  p_account_ids uuid[], p_operations text[], p_keys text[], p_fingerprints bytea[],
  p_statuses int[], p_bodies jsonb[], p_ttl_seconds int)
  returns table (ord int, outcome text, leader int, response_status int, response_body jsonb)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_claimed int[];
begin
  -- 1. The first request of each (account, operation, key) of the set claims it: a new row, or an
  --    expired one taken over (the lazy purge). Rows go in key order, so two sets claiming the same
  --    keys cannot deadlock. A key claimed by a transaction still in flight makes this insert wait
  --    for it: committed, its row is the answer (locked here until this transaction ends, so it
  --    cannot expire under us); rolled back (refused), the key is free and claimed here.
  with req as (
    select s.i, p_account_ids[s.i] as a, p_operations[s.i] as op, p_keys[s.i] as k,
           row_number() over (partition by p_account_ids[s.i], p_operations[s.i], p_keys[s.i] order by s.i) as n
    from generate_subscripts(p_keys, 1) as s(i)
    where p_keys[s.i] is not null and p_account_ids[s.i] is not null
  ), ins as (
    insert into kiln_private.idempotency_keys as t
      (account_id, operation, key, fingerprint, response_status, response_body, expires_at)
    select r.a, r.op, r.k, p_fingerprints[r.i], p_statuses[r.i], p_bodies[r.i], now() + make_interval(secs => p_ttl_seconds)
    from req r where r.n = 1
    order by r.a, r.op, r.k
    on conflict (account_id, operation, key) do update
      set fingerprint = excluded.fingerprint, response_status = excluded.response_status,
          response_body = excluded.response_body, created_at = excluded.created_at, expires_at = excluded.expires_at
      where t.expires_at <= now()
    returning t.account_id, t.operation, t.key
  )
  select array_agg(r.i) into v_claimed
    from req r join ins on ins.account_id = r.a and ins.operation = r.op and ins.key = r.k
    where r.n = 1;

  -- 2. Everyone's outcome. A new statement: it sees what the transactions waited for committed.
  --    claimed: this request goes ahead; follower: same body as its leader of this set, which
  --    went ahead; replay: the stored answer, same body; conflict: another body; pending: no
  --    stored answer to give (never committed so; answered as retryable). The stored row is a
  --    correlated subquery, one primary-key probe per unclaimed request: a join could be planned
  --    (and cached, generic) as a scan of the whole table.
  return query
    with req as (
      select s.i, p_account_ids[s.i] as a, p_operations[s.i] as op, p_keys[s.i] as k, p_fingerprints[s.i] as fp,
             min(s.i) over (partition by p_account_ids[s.i], p_operations[s.i], p_keys[s.i]) as lead
      from generate_subscripts(p_keys, 1) as s(i)
      where p_keys[s.i] is not null and p_account_ids[s.i] is not null
    ), outcome as (
      select r.*, r.lead = any (coalesce(v_claimed, '{}')) as claimed,
             case when not (r.lead = any (coalesce(v_claimed, '{}'))) then (
               select t from kiln_private.idempotency_keys t where t.account_id = r.a and t.operation = r.op and t.key = r.k) end as t
      from req r
    )
    select s.i::int,
           case
             when o.i is null then null
             when o.claimed then
               case when o.i = o.lead then 'claimed' when o.fp = p_fingerprints[o.lead] then 'follower' else 'conflict' end
             when (o.t).account_id is null then 'pending'
             when (o.t).fingerprint <> o.fp then 'conflict'
             when (o.t).response_body is null then 'pending'
             else 'replay'
           end,
           o.lead::int,
           case when (o.t).fingerprint = o.fp then (o.t).response_status::int end,
           case when (o.t).fingerprint = o.fp then (o.t).response_body end
    from generate_subscripts(p_keys, 1) as s(i)
    left join outcome o on o.i = s.i
    order by s.i;
end;
$$;
comment on function kiln_private.claim_idempotency_keys(uuid[], text[], text[], bytea[], int[], jsonb[], int) is
  'Claims the Idempotency-Keys of a set of requests (null key = none) in the caller''s transaction, storing each claimant''s fingerprint and the answer it will get if accepted (status, body; the caller deletes the claim of a request it refuses). Each row says claimed, follower (of the request `leader` of the same set), replay (with the stored status and body), conflict (another body) or pending.';

-- The generation primitive takes the keys of its requests (null: no request has one; the
-- unkeyed path is unchanged). A claimed request goes through the rules, the reservation and the
-- insert as before; its claim already holds the answer it gets when accepted ({id, status}), so
-- an accepted keyed request costs one more indexed insert, and a refused one deletes its claim.
drop function if exists kiln_private.insert_generations(uuid[], uuid[], uuid[], text[], text[], text[], bigint[], jsonb[], bigint[], int);
create or replace function kiln_private.insert_generations(
  p_account_ids uuid[], p_key_ids uuid[], p_workspace_ids uuid[], p_origins text[], p_types text[], p_model_ids text[],
  p_model_versions bigint[], p_requests jsonb[], p_reserves bigint[], p_max_attempts int,
  p_idem_keys text[] default null, p_fingerprints bytea[] default null, p_idem_ttl_seconds int default 86400)
  returns table (ord int, id uuid, error_code text, error_message text, replayed boolean)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
as $$
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
  select array_agg(x.err order by x.i), array_agg(x.msg order by x.i), array_agg(gen_random_uuid() order by x.i)
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
             end as err,
             case
               when p_types[s.i] is null or p_types[s.i] not in ('image', 'code') then 'type must be image or code'
               when m.id is null then format('model "%s" is not in the catalog', left(p_model_ids[s.i], 200))
               when p_model_versions[s.i] is not null
                    and p_model_versions[s.i] <> (extract(epoch from m.updated_at) * 1000000)::bigint then 'the catalog entry changed; price again'
               when (p_types[s.i] = 'image') <> (m.category = 'image') then format('model "%s" cannot produce %s output', m.id, p_types[s.i])
             end as msg
      from generate_subscripts(p_account_ids, 1) as s(i)
      left join kiln_private.models m on m.id = p_model_ids[s.i] and m.enabled
    ) x;
  c_charge := array_fill(null::uuid, array[cardinality(p_account_ids)]);

  -- 1b. Idempotency keys: a replay answers what was stored even when the request would now be
  --     refused; only claimants go on (followers, replays and conflicts reserve nothing).
  if p_idem_keys is not null then
    select array_agg(c.outcome order by c.ord), array_agg(c.leader order by c.ord),
           array_agg((c.response_body->>'id')::uuid order by c.ord)
      into c_claim, c_lead, c_stored
      from kiln_private.claim_idempotency_keys(
        p_account_ids, array_fill('POST /generations'::text, array[cardinality(p_account_ids)]), p_idem_keys, p_fingerprints,
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
        (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, charge_id, max_attempts)
      select c_gid[s.i], p_account_ids[s.i], p_key_ids[s.i], p_workspace_ids[s.i], p_origins[s.i], p_model_ids[s.i],
             p_types[s.i], p_requests[s.i], p_reserves[s.i], c_charge[s.i], p_max_attempts
      from generate_subscripts(p_account_ids, 1) as s(i)
      where c_charge[s.i] is not null
      returning id, created_at
    )
    select array_agg(g.id order by g.created_at) into v_created from gens g;
    perform kiln_private.enqueue_new_generations(v_created, p_max_attempts);
  end if;

  -- 4. A refused claimant keeps nothing: its retry may succeed later (one primary-key delete each).
  if p_idem_keys is not null then
    for v_n in 1 .. cardinality(p_account_ids) loop
      if c_claim[v_n] = 'claimed' and c_charge[v_n] is null then
        delete from kiln_private.idempotency_keys
          where account_id = p_account_ids[v_n] and operation = 'POST /generations' and key = p_idem_keys[v_n];
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
$$;
comment on function kiln_private.insert_generations(uuid[], uuid[], uuid[], text[], text[], text[], bigint[], jsonb[], bigint[], int, text[], bytea[], int) is
  'The generation primitive: claims the requests'' idempotency keys (kiln_private.claim_idempotency_keys; a replay answers the stored id, another body KD001), checks each request''s type and model (KI001) and its catalog price version (KS001), reserves the worst case (kiln_private.reserve_budgets), inserts the generations and queues their generation__run jobs, for a whole set at once. Each row carries the new (or replayed) id or the request''s own refusal; the others still go in.';

-- POST /generations in one call, with the requests' keys.
drop function if exists kiln.start_generations(bytea[], text, text[], text[], bigint[], jsonb[], bigint[], int);
create or replace function kiln.start_generations(
  p_key_hashes bytea[], p_origin text, p_types text[], p_model_ids text[], p_model_versions bigint[], p_requests jsonb[],
  p_reserves bigint[], p_max_attempts int,
  p_idem_keys text[] default null, p_fingerprints bytea[] default null, p_idem_ttl_seconds int default 86400)
  returns table (ord int, status text, key_id uuid, account_id uuid, workspace_id uuid, retry_after int,
                 id uuid, error_code text, error_message text, replayed boolean)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
as $$
#variable_conflict use_column
declare
  v_n int := coalesce(cardinality(p_key_hashes), 0);
  a_status text[];
  a_key uuid[];
  a_account uuid[];
  a_workspace uuid[];
  a_retry int[];
  v_idx int[];
begin
  if v_n = 0 then
    return;
  end if;
  if v_n > 50 then
    raise exception 'at most 50 generations per call' using errcode = '22023';
  end if;
  -- 1. Key, write scope and the key's own rpm (generation starts have no endpoint bucket).
  select array_agg(r.status order by r.ord), array_agg(r.key_id order by r.ord), array_agg(r.account_id order by r.ord),
         array_agg(r.workspace_id order by r.ord), array_agg(r.retry_after order by r.ord)
    into a_status, a_key, a_account, a_workspace, a_retry
    from kiln.authorize_requests(p_key_hashes, array_fill('write'::text, array[v_n]), array_fill(null::text, array[v_n]),
                                 array_fill(null::int, array[v_n]), array_fill(false, array[v_n])) r;
  -- 2. The admitted requests, through the generation primitive (a refused key claims nothing).
  select array_agg(s.i order by s.i) into v_idx from generate_subscripts(p_key_hashes, 1) as s(i) where a_status[s.i] = 'ok';
  return query
    with g as (
      select * from kiln_private.insert_generations(
        array(select a_account[i] from unnest(v_idx) as u(i)),
        array(select a_key[i] from unnest(v_idx) as u(i)),
        array(select a_workspace[i] from unnest(v_idx) as u(i)),
        array_fill(p_origin, array[coalesce(cardinality(v_idx), 0)]),
        array(select p_types[i] from unnest(v_idx) as u(i)),
        array(select p_model_ids[i] from unnest(v_idx) as u(i)),
        array(select p_model_versions[i] from unnest(v_idx) as u(i)),
        array(select p_requests[i] from unnest(v_idx) as u(i)),
        array(select p_reserves[i] from unnest(v_idx) as u(i)),
        p_max_attempts,
        case when p_idem_keys is not null then array(select p_idem_keys[i] from unnest(v_idx) as u(i)) end,
        case when p_idem_keys is not null then array(select p_fingerprints[i] from unnest(v_idx) as u(i)) end,
        p_idem_ttl_seconds)
    )
    select s.i::int, a_status[s.i], a_key[s.i], a_account[s.i], a_workspace[s.i], a_retry[s.i], g.id, g.error_code, g.error_message,
           coalesce(g.replayed, false)
    from generate_subscripts(p_key_hashes, 1) as s(i)
    left join g on v_idx[g.ord] = s.i
    order by s.i;
end;
$$;
comment on function kiln.start_generations(bytea[], text, text[], text[], bigint[], jsonb[], bigint[], int, text[], bytea[], int) is
  'POST /generations for up to 50 requests in one transaction: authenticates each key (write scope, the key''s own rpm), then starts the admitted ones through kiln_private.insert_generations, with their Idempotency-Keys (null: none) kept p_idem_ttl_seconds. Each row carries its authorization status and either the new id (replayed: the stored id of an earlier request with that key and body) or its own business error (KI001, KQ001, KP001, KS001, KD001, KD002); the others still commit.';

drop function if exists kiln.create_generations(uuid[], uuid[], uuid[], text[], text[], text[], bigint[], jsonb[], bigint[], int[]);
create or replace function kiln.create_generations(
  p_account_ids uuid[], p_key_ids uuid[], p_workspace_ids uuid[], p_origins text[], p_types text[], p_model_ids text[],
  p_model_versions bigint[], p_requests jsonb[], p_reserves bigint[], p_max_attempts int[],
  p_idem_keys text[] default null, p_fingerprints bytea[] default null, p_idem_ttl_seconds int default 86400)
  returns table (ord int, id uuid, error_code text, error_message text, replayed boolean)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
as $$
begin
  if cardinality(p_account_ids) > 50 then
    raise exception 'at most 50 generations per call' using errcode = '22023';
  end if;
  -- One attempts limit per call (every caller passes the same); the largest is kept.
  return query select * from kiln_private.insert_generations(p_account_ids, p_key_ids, p_workspace_ids, p_origins, p_types,
    p_model_ids, p_model_versions, p_requests, p_reserves, (select max(a) from unnest(p_max_attempts) a),
    p_idem_keys, p_fingerprints, p_idem_ttl_seconds);
end;
$$;
comment on function kiln.create_generations(uuid[], uuid[], uuid[], text[], text[], text[], bigint[], jsonb[], bigint[], int[], text[], bytea[], int) is
  'Starts up to 50 generations of already-authorized callers in one transaction (kiln_private.insert_generations), with their Idempotency-Keys (null: none). Each row reports its id (replayed: stored by an earlier request with that key and body), or the SQLSTATE and message of its own business error; the others still commit.';

-- Runs: the claim is the first statement of the run's transaction, the answer is recorded by its last.
create or replace function kiln.claim_idempotency_key(p_account_id uuid, p_operation text, p_key text, p_fingerprint bytea, p_ttl_seconds int)
  returns table (replayed boolean, response_status int, response_body jsonb)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_c record;
begin
  select * into v_c from kiln_private.claim_idempotency_keys(array[p_account_id], array[p_operation], array[p_key],
    array[p_fingerprint], array[null::int], array[null::jsonb], p_ttl_seconds);
  if v_c.outcome = 'conflict' then
    raise exception 'this idempotency key was already used with a different request; use a new key for a new request' using errcode = 'KD001';
  elsif v_c.outcome = 'pending' then
    raise exception 'a request with this idempotency key is still being processed; retry' using errcode = 'KD002';
  end if;
  return query select v_c.outcome = 'replay', v_c.response_status, v_c.response_body;
end;
$$;
comment on function kiln.claim_idempotency_key(uuid, text, text, bytea, int) is
  'Claims one Idempotency-Key for the caller''s transaction (kiln_private.claim_idempotency_keys): replayed false = claimed (record the answer with kiln.record_idempotency_key before committing; a rollback frees the key), true = the stored status and body. Raises KD001 (used with another request), KD002 (no stored answer).';

create or replace function kiln.record_idempotency_key(p_account_id uuid, p_operation text, p_key text, p_status int, p_body jsonb)
  returns void
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  update kiln_private.idempotency_keys set response_status = p_status, response_body = p_body
    where account_id = p_account_id and operation = p_operation and key = p_key and response_body is null;
$$;
comment on function kiln.record_idempotency_key(uuid, text, text, int, jsonb) is
  'Stores the answer of a request whose Idempotency-Key this transaction claimed (kiln.claim_idempotency_key).';

create or replace function kiln.purge_idempotency_keys(p_limit int)
  returns int
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  with gone as (
    delete from kiln_private.idempotency_keys
    where ctid = any (array(
      select ctid from kiln_private.idempotency_keys where expires_at <= now() order by expires_at limit p_limit))
    returning 1
  )
  select count(*)::int from gone;
$$;
comment on function kiln.purge_idempotency_keys(int) is
  'Deletes up to p_limit expired Idempotency-Key records (the workers'' sweep calls it; a claim also takes over an expired record of its own key).';

--! split: 2-notify.sql
-- Status notifications (issue #12, "Wait" and "Live events"): every status change of a
-- generation, and every change of a run's status or settled outputs, sends one NOTIFY on the
-- channel `kiln_status`, whatever function made it (complete, fail, cancel, expire, retry, …).
-- API processes LISTEN once each and wake their in-memory waiters (src/live/hub.ts).
-- Payloads are small JSON: {"k":"generation"|"run","id":…,"a":account id[,"s":status]} —
-- never a result. Notifications are sent at commit, so a waiter woken by one reads the new state.

drop trigger if exists tg_generations__notify on kiln_private.generations;
drop trigger if exists tg_workflow_runs__notify on kiln_private.workflow_runs;
drop trigger if exists tg_workflow_run_outputs__notify on kiln_private.workflow_run_outputs;

create or replace function kiln_private.tg_generations__notify() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  -- The status rides along so that a waiter for a terminal state can skip `processing` without a read.
  perform pg_notify('kiln_status', json_build_object('k', 'generation', 'id', new.id, 'a', new.account_id, 's', new.status)::text);
  return null;
end;
$$;
comment on function kiln_private.tg_generations__notify() is 'Trigger: NOTIFY kiln_status with {k: generation, id, a: account, s: status} when a generation''s status changes.';

create or replace function kiln_private.tg_workflow_runs__notify() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_run_id uuid;
begin
  -- One payload per run for both tables, without a status: identical payloads of one transaction
  -- are delivered once, so settling an output (its row, the run's counters, maybe the run's
  -- status) wakes each waiter once.
  if tg_table_name = 'workflow_runs' then
    v_run_id := new.id;
  else
    v_run_id := new.run_id;
  end if;
  perform pg_notify('kiln_status', json_build_object('k', 'run', 'id', v_run_id, 'a', new.account_id)::text);
  return null;
end;
$$;
comment on function kiln_private.tg_workflow_runs__notify() is 'Trigger on workflow_runs and workflow_run_outputs: NOTIFY kiln_status with {k: run, id: run id, a: account} when a run''s status or counters change or an output settles.';

create trigger tg_generations__notify
  after update of status on kiln_private.generations
  for each row when (old.status is distinct from new.status)
  execute function kiln_private.tg_generations__notify();

create trigger tg_workflow_runs__notify
  after update on kiln_private.workflow_runs
  for each row when (old.status is distinct from new.status or old.settled is distinct from new.settled or old.abandoned is distinct from new.abandoned)
  execute function kiln_private.tg_workflow_runs__notify();

create trigger tg_workflow_run_outputs__notify
  after update of status on kiln_private.workflow_run_outputs
  for each row when (old.status is distinct from new.status and new.status in ('completed', 'failed', 'skipped', 'abandoned'))
  execute function kiln_private.tg_workflow_runs__notify();

-- A run as GET /workflows/{id}/runs/{runId} reads it, plus whether any output can still settle:
-- an event stream ends only when nothing can change any more (a failed run's in-flight outputs
-- may still record results after the run failed).
create or replace function kiln.watch_workflow_run(p_account_id uuid, p_workflow_id uuid, p_run_id uuid) returns json
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select (kiln.get_workflow_run(r.account_id, r.workflow_id, r.id)::jsonb
          || jsonb_build_object('open', r.settled + r.abandoned < r.total))::json
  from kiln_private.workflow_runs r
  where r.id = p_run_id and r.account_id = p_account_id and r.workflow_id = p_workflow_id;
$$;
comment on function kiln.watch_workflow_run(uuid,uuid,uuid) is 'kiln.get_workflow_run plus `open`: whether any output of the run can still settle (settled + abandoned < total). Null when the run is not that account''s run of that workflow.';

--! split: 3-cancel-retry.sql
-- Cancel, run retry and run history (issue #12): cancel a generation or a run (reservations
-- released, running provider calls aborted through NOTIFY "kiln:cancel"), retry a failed run on
-- its snapshot reusing its completed outputs, and list a workflow's runs.
-- Re-runnable: create or replace / if not exists throughout.

alter table kiln_private.workflow_runs add column if not exists retry_of uuid;
do $$
begin
  if not exists (select 1 from pg_constraint where conname = 'workflow_runs_retry_of_fkey') then
    alter table kiln_private.workflow_runs
      add constraint workflow_runs_retry_of_fkey foreign key (retry_of) references kiln_private.workflow_runs(id);
  end if;
end;
$$;
-- A failed run is retried at most once (a second retry, or a concurrent duplicate, is a conflict).
create unique index if not exists workflow_runs_retry_of_key on kiln_private.workflow_runs (retry_of) where retry_of is not null;
comment on column kiln_private.workflow_runs.retry_of is 'The failed run this run retries (same snapshot; its completed outputs reused), or null.';
comment on column kiln_private.workflow_run_outputs.generation_id is 'The generation that produces this output (null for skipped video outputs and for outputs a retry reused from the run it retries).';

-- ---------------------------------------------------------------- cancel a generation

create or replace function kiln_private.cancel_generation(p_id uuid) returns boolean
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_status text;
begin
  select status into v_status from kiln_private.generations where id = p_id;
  if not found or v_status in ('completed', 'failed') then
    return false;
  end if;
  -- Fails it with the error 'canceled' and releases its reservation (a run output also records
  -- the failure on its run); a completion that comes later finds it terminal and applies nothing.
  if not (kiln.fail_generation(p_id, 'canceled')->>'applied')::boolean then
    return false;
  end if;
  -- A queued job is dropped; a locked one keeps running but will not be retried.
  perform graphile_worker.remove_job(p_id::text);
  if v_status = 'processing' then
    -- Whichever worker runs it aborts its provider call (delivered at commit).
    perform pg_notify('kiln:cancel', p_id::text);
  end if;
  return true;
end;
$$;
comment on function kiln_private.cancel_generation(uuid) is 'Cancels a pending or processing generation: fails it with error ''canceled'' and releases its reservation (kiln.fail_generation), drops its queued job and, when it was processing, notifies channel kiln:cancel with its id so its worker aborts the provider call. False when it had already ended. Callers lock its run first, when it has one.';

create or replace function kiln.cancel_generation(p_account_id uuid, p_id uuid, p_origins text[]) returns json
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_gen kiln_private.generations;
begin
  select * into v_gen from kiln_private.generations
    where id = p_id and account_id = p_account_id and origin = any (p_origins);
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  if v_gen.run_id is not null then
    -- The lock order of every settlement: the run, then the generation.
    perform 1 from kiln_private.workflow_runs where id = v_gen.run_id for update;
  end if;
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if v_gen.status in ('completed', 'failed') then
    return json_build_object('outcome', 'conflict', 'body', kiln_private.generation_body(v_gen));
  end if;
  perform kiln_private.cancel_generation(p_id);
  select * into v_gen from kiln_private.generations where id = p_id;
  return json_build_object('outcome', 'canceled', 'body', kiln_private.generation_body(v_gen));
end;
$$;
comment on function kiln.cancel_generation(uuid,uuid,text[]) is 'Cancels a generation of the account created through one of p_origins: outcome canceled (failed with error ''canceled'', reservation released, its worker told to abort), conflict (already completed or failed) or missing; body = the generation as the API reads it. Never raises for these outcomes (safe in a batch).';

create or replace function kiln_private.authorize_controls(p_key_hashes bytea[], p_read_rpm integer)
returns table(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer)
language sql volatile
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
  select r.ord, r.status, r.key_id, r.account_id, r.workspace_id, r.tier, r.scopes, r.retry_after
  from kiln.authorize_requests(
         p_key_hashes,
         array_fill('write'::text, array[cardinality(p_key_hashes)]),
         array_fill('read'::text, array[cardinality(p_key_hashes)]),
         array_fill(p_read_rpm, array[cardinality(p_key_hashes)]),
         array_fill(false, array[cardinality(p_key_hashes)])) r;
$$;
comment on function kiln_private.authorize_controls(bytea[],integer) is 'kiln.authorize_requests for a batch of job controls (cancel): write scope, the per-key read bucket at p_read_rpm (a cancel costs what a poll costs) and each key''s own rpm.';

create or replace function kiln.cancel_generations_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_ids uuid[], p_origin text)
returns table(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, outcome text, body json)
language sql volatile security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
  select a.ord, a.status, a.key_id, a.account_id, a.workspace_id, a.tier, a.scopes, a.retry_after, c->>'outcome', c->'body'
  from kiln_private.authorize_controls(p_key_hashes, p_read_rpm) a
  left join lateral (
    select kiln.cancel_generation(a.account_id, p_ids[a.ord], array[p_origin]) as c where a.status = 'ok'
  ) x on true
  order by a.ord;
$$;
comment on function kiln.cancel_generations_for_keys(bytea[],integer,uuid[],text) is 'POST /generations/{id}/cancel for a batch in one transaction: authorizes each key (write scope, the per-key read bucket, the key''s own rpm) and, when admitted, cancels that generation of the key''s account created through p_origin (kiln.cancel_generation; outcome null when not admitted).';

-- ---------------------------------------------------------------- cancel a run

create or replace function kiln.cancel_workflow_run(p_account_id uuid, p_workflow_id uuid, p_run_id uuid) returns json
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_run kiln_private.workflow_runs;
  v_out record;
begin
  select * into v_run from kiln_private.workflow_runs
    where id = p_run_id and account_id = p_account_id and workflow_id = p_workflow_id
    for update;
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  if v_run.status in ('completed', 'failed') then
    return json_build_object('outcome', 'conflict', 'status', v_run.status);
  end if;
  -- The run fails with 'canceled' first (outputs not started are abandoned, nothing charged) ...
  perform kiln_private.fail_workflow_run(p_run_id, 'canceled');
  -- ... then each output in flight is canceled like a generation: failed 'canceled', released,
  -- its provider call aborted. Completed outputs keep their results and charges.
  for v_out in
    select o.generation_id from kiln_private.workflow_run_outputs o
      where o.run_id = p_run_id and o.status in ('queued', 'running') and o.generation_id is not null
      order by o.ordinal
  loop
    perform kiln_private.cancel_generation(v_out.generation_id);
  end loop;
  return json_build_object('outcome', 'canceled', 'run', kiln.get_workflow_run(p_account_id, p_workflow_id, p_run_id));
end;
$$;
comment on function kiln.cancel_workflow_run(uuid,uuid,uuid) is 'Cancels a pending or running run of the account''s workflow: the run fails with error ''canceled'', outputs not started are abandoned, outputs in flight are canceled (kiln_private.cancel_generation: released, their workers told to abort), completed ones stay. Outcome canceled (with the run as kiln.get_workflow_run reads it), conflict (already completed or failed) or missing. Never raises for these outcomes.';

create or replace function kiln.cancel_workflow_runs_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_workflow_ids uuid[], p_run_ids uuid[])
returns table(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, outcome text, body json)
language sql volatile security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
  select a.ord, a.status, a.key_id, a.account_id, a.workspace_id, a.tier, a.scopes, a.retry_after, c->>'outcome', c->'run'
  from kiln_private.authorize_controls(p_key_hashes, p_read_rpm) a
  left join lateral (
    select kiln.cancel_workflow_run(a.account_id, p_workflow_ids[a.ord], p_run_ids[a.ord]) as c where a.status = 'ok'
  ) x on true
  order by a.ord;
$$;
comment on function kiln.cancel_workflow_runs_for_keys(bytea[],integer,uuid[],uuid[]) is 'POST /workflows/{id}/runs/{runId}/cancel for a batch in one transaction: authorizes each key (write scope, the per-key read bucket, the key''s own rpm) and, when admitted, cancels that run of the key''s account (kiln.cancel_workflow_run; outcome null when not admitted).';

-- ---------------------------------------------------------------- worker backstop

create or replace function kiln.filter_ended_generations(p_ids uuid[]) returns uuid[]
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select coalesce(array_agg(g.id), '{}') from kiln_private.generations g
  where g.id = any (p_ids) and g.status in ('completed', 'failed');
$$;
comment on function kiln.filter_ended_generations(uuid[]) is 'Those of the given generations that have ended (completed or failed): a worker aborts the ones it still runs — the backstop for a kiln:cancel notification it missed.';

-- ---------------------------------------------------------------- retry a run

create or replace function kiln_private.check_run_budget(p_account_id uuid, p_workspace_id uuid) returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_usage json := kiln.get_usage(p_account_id, p_workspace_id);
begin
  -- The rule kiln.start_workflow_run applies: refuse a run that could not charge a single output.
  if v_usage->>'tier' = 'blocked' then
    raise exception 'this account cannot start generations' using errcode = 'KQ001';
  end if;
  if p_workspace_id is not null then
    if v_usage->>'workspace_used_micros' is null then
      raise exception 'the workspace''s Team plan is not active, or the key''s owner left the workspace' using errcode = 'KP001';
    end if;
    if (v_usage->>'workspace_remaining_micros')::bigint <= 0 then
      raise exception 'the budget for this period is exhausted' using errcode = 'KQ001';
    end if;
  elsif (v_usage->>'remaining_micros')::bigint <= 0 then
    raise exception 'the budget for this period is exhausted' using errcode = 'KQ001';
  end if;
end;
$$;
comment on function kiln_private.check_run_budget(uuid,uuid) is 'Raises KQ001 / KP001 when a run started by this caller could not charge a single output (blocked tier, exhausted budget, Team plan not active or owner left).';

create or replace function kiln.retry_workflow_run(p_account_id uuid, p_key_id uuid, p_workspace_id uuid, p_origin text,
                                                   p_workflow_id uuid, p_run_id uuid, p_window_seconds integer, p_max_attempts integer)
returns uuid
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
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
  if v_old.status <> 'failed' then
    raise exception 'only a failed run can be retried; this run is %', v_old.status using errcode = 'KT001';
  end if;
  select id into v_retry from kiln_private.workflow_runs where retry_of = p_run_id;
  if found then
    raise exception 'this run was already retried by run %', v_retry using errcode = 'KT001';
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
    (id, workflow_id, account_id, key_id, workspace_id, origin, snapshot, total, deadline, window_seconds, max_attempts, retry_of)
  values
    (v_id, v_old.workflow_id, p_account_id, p_key_id, p_workspace_id, p_origin, v_old.snapshot, v_old.total,
     v_deadline, p_window_seconds, p_max_attempts, p_run_id);

  -- Completed (and skipped) outputs are reused: their results copied, nothing run or charged
  -- again. Every other output gets a new generation and waits for those of its inputs that run.
  with old as (
    select o.*, o.status in ('completed', 'skipped') as keep
    from kiln_private.workflow_run_outputs o where o.run_id = p_run_id
  ), plan as (
    select o.*, case when o.keep then null else gen_random_uuid() end as gen_id,
           (select count(*)::int from old u where u.output_node_id = any (o.refs) and not u.keep) as deps
    from old o
  ), gens as (
    insert into kiln_private.generations
      (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, max_attempts, run_id, output_node_id)
    select p.gen_id, p_account_id, p_key_id, p_workspace_id, 'workflow', coalesce(p.spec->'model'->>'id', ''),
           case when p.type = 'image' then 'image' else 'code' end, p.spec, 0, p_max_attempts, v_id, p.output_node_id
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
$$;
comment on function kiln.retry_workflow_run(uuid,uuid,uuid,text,uuid,uuid,integer,integer) is 'Retries a failed run of the account''s workflow as a new run (retry_of = it) on the same snapshot, billed to the caller: completed and skipped outputs are reused (results copied, cost 0, never run or charged again), outputs of the old run still in flight are canceled, and every other output runs again once the inputs it reads are settled. KN001 unknown run, KT001 not failed or already retried, KQ001 / KP001 budget.';

-- ---------------------------------------------------------------- run history

create or replace function kiln.list_workflow_runs(p_account_id uuid, p_workflow_id uuid, p_limit integer, p_offset integer) returns json
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select case when exists (select 1 from kiln_private.workflows w where w.id = p_workflow_id and w.account_id = p_account_id) then (
    select coalesce(json_agg(json_build_object(
             'id', r.id,
             'status', r.status,
             'progress', json_build_object('total', r.total, 'completed', r.settled),
             'createdAt', to_char(r.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'completedAt', to_char(r.completed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'retryOf', r.retry_of)
           order by r.created_at desc, r.id desc), '[]'::json)
    from (select * from kiln_private.workflow_runs r
          where r.workflow_id = p_workflow_id and r.account_id = p_account_id
          order by r.created_at desc, r.id desc
          limit p_limit offset p_offset) r) end;
$$;
comment on function kiln.list_workflow_runs(uuid,uuid,integer,integer) is 'A page of the runs of the account''s workflow, newest first (id, status, progress, createdAt, completedAt, retryOf); null when the workflow is not the account''s.';

create or replace function kiln.list_workflow_runs_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_workflow_ids uuid[], p_limits integer[], p_offsets integer[])
returns table(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
language sql volatile security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
  select r.*, case when r.status = 'ok' then kiln.list_workflow_runs(r.account_id, p_workflow_ids[r.ord], p_limits[r.ord], p_offsets[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$$;
comment on function kiln.list_workflow_runs_for_keys(bytea[],integer,uuid[],integer[],integer[]) is 'GET /workflows/{id}/runs for a batch in one transaction: authorizes each key (read scope, the per-key read bucket and the key''s own rpm) and, when admitted, returns that page of runs (kiln.list_workflow_runs; null body when the workflow is not the key''s account''s).';

-- ---------------------------------------------------------------- the run body says what it retried

create or replace function kiln.get_workflow_run(p_account_id uuid, p_workflow_id uuid, p_run_id uuid) returns json
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
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
               'costMicros', coalesce(o.cost_micros, 0))
             order by o.finished_at, o.ordinal), '[]'::json)
      from kiln_private.workflow_run_outputs o
      where o.run_id = r.id and o.status in ('completed', 'failed', 'skipped')))
  from kiln_private.workflow_runs r
  where r.id = p_run_id and r.account_id = p_account_id and r.workflow_id = p_workflow_id;
$$;
comment on function kiln.get_workflow_run(uuid,uuid,uuid) is 'A run''s state (with the run it retried, if any) and its settled results (in settling order) for its owner, when it belongs to that workflow; null otherwise.';

--! split: 8-start-run-budget.sql
-- kiln.start_workflow_run and kiln.retry_workflow_run share one budget rule (kiln_private.check_run_budget).

create or replace function kiln.start_workflow_run(
  p_account_id uuid,
  p_key_id uuid,
  p_workspace_id uuid,
  p_origin text,
  p_workflow_id uuid,
  p_snapshot jsonb,
  p_outputs jsonb,
  p_window_seconds int,
  p_max_attempts int
) returns uuid
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_id uuid := gen_random_uuid();
  v_deadline timestamptz := now() + make_interval(secs => p_window_seconds);
  v_skipped int;
  v_ready uuid[];
begin
  perform 1 from kiln_private.workflows where id = p_workflow_id and account_id = p_account_id;
  if not found then
    raise exception 'workflow not found' using errcode = 'KN001';
  end if;
  -- Refuse a run that could not charge a single output (every output reserves as it starts).
  perform kiln_private.check_run_budget(p_account_id, p_workspace_id);

  insert into kiln_private.workflow_runs
    (id, workflow_id, account_id, key_id, workspace_id, origin, snapshot, total, deadline, window_seconds, max_attempts)
  values
    (v_id, p_workflow_id, p_account_id, p_key_id, p_workspace_id, p_origin, p_snapshot,
     jsonb_array_length(p_outputs), v_deadline, p_window_seconds, p_max_attempts);

  with units as (
    select u.*, case when u.type = 'video' then null else gen_random_uuid() end as gen_id
    from jsonb_to_recordset(p_outputs) as u(output text, prompt text, ordinal int, type text, spec jsonb, refs text[], deps int, dependents text[])
  ), gens as (
    insert into kiln_private.generations
      (id, account_id, key_id, workspace_id, origin, model_id, type, request, reserved_micros, max_attempts, run_id, output_node_id)
    select u.gen_id, p_account_id, p_key_id, p_workspace_id, 'workflow', coalesce(u.spec->'model'->>'id', ''),
           case when u.type = 'image' then 'image' else 'code' end, u.spec, 0, p_max_attempts, v_id, u.output
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
$$;
comment on function kiln.start_workflow_run(uuid, uuid, uuid, text, uuid, jsonb, jsonb, int, int) is
  'Starts a run in one transaction: checks ownership and that the caller can be charged (KN001, KQ001, KP001), stores the snapshot, the outputs with their dependency counts and one generation (origin workflow) per output, and queues the ready ones plus the run-window check.';
