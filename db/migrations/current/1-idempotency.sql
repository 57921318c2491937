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
