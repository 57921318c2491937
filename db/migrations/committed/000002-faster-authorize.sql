--! Previous: sha1:70823520fa49df310dd6fa0f49fac1ad33216060
--! Hash: sha1:97a8350fd142b48603ab83feebfbf3140313cfc1
--! Message: faster authorize

--! split: 1-limits.sql
-- Hot path of every request: authenticate + scope + rate limits in as few statements as
-- possible. A single bucket (the common case) is one INSERT … ON CONFLICT DO UPDATE … WHERE,
-- which is atomic per row; several buckets keep the all-or-nothing locking path.

alter table kiln_private.rate_limit_buckets set (fillfactor = 50);

create or replace function kiln.consume_rate_limits(p_keys text[], p_limits int[])
  returns int
  language plpgsql volatile
  set lock_timeout = '2s'
as $$
declare
  v_now timestamptz := clock_timestamp();
  v_retry numeric := 0;
  v_i int;
  v_tat timestamptz;
  v_interval interval;
  v_new_tat timestamptz[] := array[]::timestamptz[];
begin
  if cardinality(p_keys) is distinct from cardinality(p_limits) then
    raise exception 'keys and limits differ in length' using errcode = '22023';
  end if;
  if coalesce(cardinality(p_keys), 0) = 0 then
    return 0;
  end if;
  if cardinality(p_keys) = 1 then
    -- Emission interval T = 60 s / N; a burst of N is allowed (tolerance N·T = 60 s).
    v_interval := make_interval(secs => 60.0 / p_limits[1]);
    insert into kiln_private.rate_limit_buckets as b (key, tat)
      values (p_keys[1], v_now + v_interval)
      on conflict (key) do update
        set tat = greatest(b.tat, v_now) + v_interval
        where greatest(b.tat, v_now) + v_interval - v_now <= interval '60 seconds';
    if found then
      return 0;
    end if;
    select tat into v_tat from kiln_private.rate_limit_buckets where key = p_keys[1];
    -- Rounded up: waiting this long always finds room again.
    return greatest(1, ceil(extract(epoch from (greatest(v_tat, v_now) + v_interval - v_now - interval '60 seconds')))::int);
  end if;

  insert into kiln_private.rate_limit_buckets (key, tat)
    select k, '-infinity' from unnest(p_keys) k
    on conflict (key) do nothing;
  -- Lock every bucket in a fixed order (no deadlocks), decide, then write all or none,
  -- so a request denied by one bucket consumes nothing from the others.
  perform 1 from kiln_private.rate_limit_buckets
    where key = any (p_keys) order by key for update;
  for v_i in 1 .. cardinality(p_keys) loop
    select tat into v_tat from kiln_private.rate_limit_buckets where key = p_keys[v_i];
    v_interval := make_interval(secs => 60.0 / p_limits[v_i]);
    v_new_tat := v_new_tat || (greatest(v_tat, v_now) + v_interval);
    if v_new_tat[v_i] - v_now > interval '60 seconds' then
      v_retry := greatest(v_retry,
        extract(epoch from (v_new_tat[v_i] - v_now - interval '60 seconds')));
    end if;
  end loop;
  if v_retry > 0 then
    return greatest(1, ceil(v_retry)::int);
  end if;
  for v_i in 1 .. cardinality(p_keys) loop
    update kiln_private.rate_limit_buckets set tat = v_new_tat[v_i] where key = p_keys[v_i];
  end loop;
  return 0;
end;
$$;

create or replace function kiln.authorize_request(
  p_key_hash bytea,
  p_scope text,
  p_bucket text,
  p_bucket_rpm int
) returns kiln.request_auth
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_key record;
  v_keys text[];
  v_limits int[];
  v_retry int;
begin
  -- Always a fresh read: a revoked key fails on the very next request.
  select k.id, k.account_id, k.workspace_id, k.scopes, k.rpm, a.tier into v_key
    from kiln_private.api_keys k join kiln_private.accounts a on a.id = k.account_id
    where k.key_hash = p_key_hash and k.revoked_at is null;
  if not found then
    return row('unauthorized', null, null, null, null, null, null)::kiln.request_auth;
  end if;
  if not (p_scope = any (v_key.scopes) or (p_scope = 'read' and 'write' = any (v_key.scopes))) then
    return row('insufficient_scope', v_key.id, v_key.account_id, v_key.workspace_id, v_key.tier, v_key.scopes, null)::kiln.request_auth;
  end if;
  v_keys := case when v_key.rpm is not null then array['key:' || v_key.id] else array[]::text[] end;
  v_limits := case when v_key.rpm is not null then array[v_key.rpm] else array[]::int[] end;
  if p_bucket = 'read' then
    v_keys := v_keys || ('read:' || v_key.id);
    v_limits := v_limits || p_bucket_rpm;
  elsif p_bucket = 'transform' then
    v_keys := v_keys || ('transform:' || v_key.account_id);
    v_limits := v_limits || p_bucket_rpm;
  elsif p_bucket is not null then
    raise exception 'unknown bucket %', p_bucket using errcode = '22023';
  end if;
  v_retry := kiln.consume_rate_limits(v_keys, v_limits);
  return row(case when v_retry > 0 then 'rate_limited' else 'ok' end,
             v_key.id, v_key.account_id, v_key.workspace_id, v_key.tier, v_key.scopes, v_retry)::kiln.request_auth;
end;
$$;

-- Plural variant (graphile-worker style): one API process batches the authorizations that
-- arrive together into one call, amortising the round trip and commit over many requests.
-- Every bucket the batch needs is locked up front in key order (so batches from several
-- processes never deadlock) and read once; admissions are then decided in arrival order in
-- memory, and each touched bucket is written once.
create or replace function kiln.authorize_requests(
  p_key_hashes bytea[],
  p_scopes text[],
  p_buckets text[],
  p_bucket_rpms int[],
  p_with_usage boolean[]
) returns table (ord int, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after int, usage text)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set lock_timeout = '2s'
as $$
declare
  v_n int := coalesce(cardinality(p_key_hashes), 0);
  v_now timestamptz := clock_timestamp();
  v_keys record;
  -- per request (index = ord)
  v_key_ids uuid[] := array_fill(null::uuid, array[v_n]);
  v_accounts uuid[] := array_fill(null::uuid, array[v_n]);
  v_workspaces uuid[] := array_fill(null::uuid, array[v_n]);
  v_tiers text[] := array_fill(null::text, array[v_n]);
  v_scopes text[][];
  v_scope_ok boolean[] := array_fill(false, array[v_n]);
  v_rpms int[] := array_fill(null::int, array[v_n]);
  -- buckets of the batch, sorted, with their TAT
  v_bkeys text[];
  v_btats timestamptz[];
  v_dirty boolean[];
  v_req_bkeys text[];
  v_req_limits int[];
  v_pos int[];
  v_new timestamptz[];
  v_retry numeric;
  v_i int;
  v_j int;
  v_interval interval;
  v_scope_lists text[] := array_fill(null::text, array[v_n]);
  v_f_hash bytea[];
  v_f_id uuid[];
  v_f_account uuid[];
  v_f_workspace uuid[];
  v_f_scopes text[];
  v_f_rpm int[];
  v_f_tier text[];
  v_usage_ords int[] := array[]::int[];
  v_fast boolean := false;
  v_blimits int[];
  v_admitted text[];
  v_bkey text;
begin
  if v_n = 0 then
    return;
  end if;
  -- All keys of the batch in one index scan (= any keeps the plan on the unique index).
  select array_agg(k.key_hash), array_agg(k.id), array_agg(k.account_id), array_agg(k.workspace_id),
         array_agg(array_to_string(k.scopes, ',')), array_agg(k.rpm), array_agg(a.tier)
    into v_f_hash, v_f_id, v_f_account, v_f_workspace, v_f_scopes, v_f_rpm, v_f_tier
    from kiln_private.api_keys k join kiln_private.accounts a on a.id = k.account_id
    where k.key_hash = any (p_key_hashes) and k.revoked_at is null;
  for v_i in 1 .. v_n loop
    v_j := array_position(v_f_hash, p_key_hashes[v_i]);
    if v_j is not null then
      v_key_ids[v_i] := v_f_id[v_j];
      v_accounts[v_i] := v_f_account[v_j];
      v_workspaces[v_i] := v_f_workspace[v_j];
      v_tiers[v_i] := v_f_tier[v_j];
      v_scope_lists[v_i] := v_f_scopes[v_j];
      v_rpms[v_i] := v_f_rpm[v_j];
      v_scope_ok[v_i] := p_scopes[v_i] = any (string_to_array(v_f_scopes[v_j], ','))
        or (p_scopes[v_i] = 'read' and 'write' = any (string_to_array(v_f_scopes[v_j], ',')));
    end if;
  end loop;

  -- Fast path (the common case): each request needs at most one bucket and no bucket is
  -- shared within the batch, so every admission is independent and one INSERT … ON CONFLICT
  -- DO UPDATE … WHERE creates, decides and debits them all, taking row locks in key order.
  v_fast := true;
  v_bkeys := array[]::text[];
  v_blimits := array[]::int[];
  for v_i in 1 .. v_n loop
    continue when v_key_ids[v_i] is null or not v_scope_ok[v_i] or p_buckets[v_i] is null and v_rpms[v_i] is null;
    if v_rpms[v_i] is not null and p_buckets[v_i] is not null then
      v_fast := false;
      exit;
    end if;
    v_bkey := case when v_rpms[v_i] is not null then 'key:' || v_key_ids[v_i]
                   when p_buckets[v_i] = 'read' then 'read:' || v_key_ids[v_i]
                   when p_buckets[v_i] = 'transform' then 'transform:' || v_accounts[v_i] end;
    if v_bkey is null then
      raise exception 'unknown bucket %', p_buckets[v_i] using errcode = '22023';
    end if;
    if v_bkey = any (v_bkeys) then
      v_fast := false;
      exit;
    end if;
    v_bkeys := v_bkeys || v_bkey;
    v_blimits := v_blimits || coalesce(v_rpms[v_i], p_bucket_rpms[v_i]);
  end loop;

  if v_fast then
    if cardinality(v_bkeys) > 0 then
      with admitted as (
        insert into kiln_private.rate_limit_buckets as b (key, tat)
          select u.key, v_now + make_interval(secs => 60.0 / u.lim)
          from unnest(v_bkeys, v_blimits) as u(key, lim)
          order by u.key
        on conflict (key) do update
          -- excluded.tat - v_now is this bucket's emission interval T = 60 s / N.
          set tat = greatest(b.tat, v_now) + (excluded.tat - v_now)
          where greatest(b.tat, v_now) + (excluded.tat - v_now) - v_now <= interval '60 seconds'
        returning b.key)
      select array_agg(key) into v_admitted from admitted;
      v_admitted := coalesce(v_admitted, array[]::text[]);
      -- v_dirty marks admitted buckets; denied ones kept their TAT: read it for retry-after.
      v_dirty := array(select k = any (v_admitted) from unnest(v_bkeys) k);
      v_btats := array_fill(null::timestamptz, array[cardinality(v_bkeys)]);
      if cardinality(v_admitted) < cardinality(v_bkeys) then
        select array_agg(t.tat order by k.o) into v_btats
          from unnest(v_bkeys) with ordinality as k(key, o)
          left join kiln_private.rate_limit_buckets t on t.key = k.key;
      end if;
    end if;
  else
    -- General path: every bucket of the batch, sorted; created when missing, then locked in
    -- key order (so batches never deadlock), decided in memory, and written once at the end.
    select array_agg(distinct b order by b) into v_bkeys
    from (
      select unnest(
        case when v_rpms[i] is not null then array['key:' || v_key_ids[i]] else array[]::text[] end ||
        case p_buckets[i] when 'read' then array['read:' || v_key_ids[i]]
                         when 'transform' then array['transform:' || v_accounts[i]]
                         else array[]::text[] end) as b
      from generate_subscripts(p_key_hashes, 1) as i
      where v_key_ids[i] is not null and v_scope_ok[i]
    ) x;
    insert into kiln_private.rate_limit_buckets (key, tat)
      select b, '-infinity' from unnest(v_bkeys) b
      where not exists (select 1 from kiln_private.rate_limit_buckets x where x.key = b)
      on conflict (key) do nothing;
    select array_agg(l.tat order by l.key) into v_btats
      from (select key, tat from kiln_private.rate_limit_buckets
            where key = any (v_bkeys) order by key for update) l;
    v_dirty := array_fill(false, array[cardinality(v_bkeys)]);
  end if;

  for v_i in 1 .. v_n loop
    ord := v_i;
    key_id := v_key_ids[v_i];
    account_id := v_accounts[v_i];
    workspace_id := v_workspaces[v_i];
    tier := v_tiers[v_i];
    scopes := string_to_array(v_scope_lists[v_i], ',');
    retry_after := null;
    usage := null;
    if v_key_ids[v_i] is null then
      status := 'unauthorized';
      key_id := null; account_id := null; workspace_id := null; tier := null; scopes := null;
      return next;
      continue;
    end if;
    if not v_scope_ok[v_i] then
      status := 'insufficient_scope';
      return next;
      continue;
    end if;
    v_req_bkeys := case when v_rpms[v_i] is not null then array['key:' || v_key_ids[v_i]] else array[]::text[] end;
    v_req_limits := case when v_rpms[v_i] is not null then array[v_rpms[v_i]] else array[]::int[] end;
    if p_buckets[v_i] = 'read' then
      v_req_bkeys := v_req_bkeys || ('read:' || v_key_ids[v_i]);
      v_req_limits := v_req_limits || p_bucket_rpms[v_i];
    elsif p_buckets[v_i] = 'transform' then
      v_req_bkeys := v_req_bkeys || ('transform:' || v_accounts[v_i]);
      v_req_limits := v_req_limits || p_bucket_rpms[v_i];
    elsif p_buckets[v_i] is not null then
      raise exception 'unknown bucket %', p_buckets[v_i] using errcode = '22023';
    end if;
    if v_fast and cardinality(v_req_bkeys) = 1 then
      v_j := array_position(v_bkeys, v_req_bkeys[1]);
      if not v_dirty[v_j] then
        status := 'rate_limited';
        retry_after := greatest(1, ceil(extract(epoch from (
          greatest(v_btats[v_j], v_now) + make_interval(secs => 60.0 / v_req_limits[1]) - v_now - interval '60 seconds')))::int);
        return next;
        continue;
      end if;
      v_req_bkeys := array[]::text[];  -- already debited
    end if;
    -- GCRA: emission interval T = 60 s / N, burst N (tolerance 60 s); all buckets or none.
    v_retry := 0;
    v_pos := array[]::int[];
    v_new := array[]::timestamptz[];
    for v_j in 1 .. coalesce(cardinality(v_req_bkeys), 0) loop
      v_pos := v_pos || array_position(v_bkeys, v_req_bkeys[v_j]);
      v_interval := make_interval(secs => 60.0 / v_req_limits[v_j]);
      v_new := v_new || (greatest(v_btats[v_pos[v_j]], v_now) + v_interval);
      if v_new[v_j] - v_now > interval '60 seconds' then
        v_retry := greatest(v_retry, extract(epoch from (v_new[v_j] - v_now - interval '60 seconds')));
      end if;
    end loop;
    if v_retry > 0 then
      status := 'rate_limited';
      -- Rounded up: waiting this long always finds room again.
      retry_after := greatest(1, ceil(v_retry)::int);
      return next;
      continue;
    end if;
    for v_j in 1 .. coalesce(cardinality(v_pos), 0) loop
      v_btats[v_pos[v_j]] := v_new[v_j];
      v_dirty[v_pos[v_j]] := true;
    end loop;
    status := 'ok';
    retry_after := 0;
    if p_with_usage[v_i] then
      -- Filled in below, for all such requests in one query.
      v_usage_ords := v_usage_ords || v_i;
      continue;
    end if;
    return next;
  end loop;

  if cardinality(v_usage_ords) > 0 then
    return query
      select o.i::int, 'ok'::text, v_key_ids[o.i], v_accounts[o.i], v_workspaces[o.i], v_tiers[o.i],
             string_to_array(v_scope_lists[o.i], ','), 0, u.usage::text
      from unnest(v_usage_ords) as o(i)
      left join lateral kiln_private.usage_rows(v_accounts[o.i], v_workspaces[o.i]) u on true;
  end if;

  if not v_fast and v_bkeys is not null and true = any (v_dirty) then
    update kiln_private.rate_limit_buckets b
      set tat = v_btats[array_position(v_bkeys, b.key)]
      where b.key = any (v_bkeys) and v_dirty[array_position(v_bkeys, b.key)];
  end if;
end;
$$;
comment on function kiln.authorize_requests(bytea[], text[], text[], int[], boolean[]) is
  'Authenticates a batch of API keys by SHA-256 hash, checks scopes and applies GCRA rate limits (the key''s custom rpm bucket and the endpoint bucket; all or none per request) in arrival order, in one transaction; optionally returns the GET /usage body. Buckets are locked in key order, so concurrent batches cannot deadlock.';

-- The single-request form shares the batch's code path.
create or replace function kiln.authorize_request(
  p_key_hash bytea,
  p_scope text,
  p_bucket text,
  p_bucket_rpm int
) returns kiln.request_auth
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select row(r.status, r.key_id, r.account_id, r.workspace_id, r.tier, r.scopes, r.retry_after)::kiln.request_auth
  from kiln.authorize_requests(array[p_key_hash], array[p_scope], array[p_bucket], array[p_bucket_rpm], array[false]) r;
$$;

-- GET /usage in one statement (the hot read path). An inlinable set-returning SQL function, so
-- the batched authorization can join it instead of calling a function per request.
create or replace function kiln_private.usage_rows(p_account_id uuid, p_workspace_id uuid) returns table (usage json)
  language sql stable
as $$
  select json_build_object(
    'tier', acct.tier,
    'token_budget_micros', acct.budget_micros,
    'used_micros', coalesce(bp.held_micros + bp.settled_micros, 0),
    'remaining_micros', case when acct.budget_micros is not null
                             then greatest(acct.budget_micros - coalesce(bp.held_micros + bp.settled_micros, 0), 0) end,
    'resets_at', case when acct.budget_micros is not null
                      then to_char((acct.period + interval '1 month') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') end,
    'scope', case when p_workspace_id is null then 'personal' else 'workspace' end,
    'workspace_id', p_workspace_id,
    'workspace_budget_micros', ws.plan_budget_micros,
    'workspace_used_micros', case when ws.id is not null then coalesce(wbp.held_micros + wbp.settled_micros, 0) end,
    'workspace_remaining_micros', case when ws.plan_budget_micros is not null
                                       then greatest(ws.plan_budget_micros - coalesce(wbp.held_micros + wbp.settled_micros, 0), 0) end,
    'workspace_resets_at', case when ws.id is not null
                                then to_char((ws.period + interval '1 month') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') end)
  from (select a.id, a.tier, a.budget_micros, kiln_private.period_start(a.period_anchor, now()) as period
        from kiln_private.accounts a where a.id = p_account_id) acct
  left join kiln_private.budget_periods bp on bp.pool_id = acct.id and bp.period_start = acct.period
  left join (select w.id, w.plan_budget_micros, kiln_private.period_start(w.plan_period_anchor, now()) as period
             from kiln_private.workspaces w
             where w.id = p_workspace_id and w.plan_status = 'active'
               and exists (select 1 from kiln_private.workspace_members m
                           where m.workspace_id = w.id and m.account_id = p_account_id and m.left_at is null)) ws on true
  left join kiln_private.budget_periods wbp on wbp.pool_id = ws.id and wbp.period_start = ws.period;
$$;
comment on function kiln_private.usage_rows(uuid, uuid) is
  'The GET /usage body as one row (none when the account does not exist); inlined by the planner into callers.';

create or replace function kiln.get_usage(p_account_id uuid, p_workspace_id uuid) returns json
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select usage from kiln_private.usage_rows(p_account_id, p_workspace_id);
$$;
comment on function kiln.get_usage(uuid, uuid) is
  'The GET /usage body for an account, and for a workspace-bound key its Team pool (workspace_* null when the plan is not active or the member left). Null when the account does not exist.';
