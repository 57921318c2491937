--! Previous: sha1:dd61afe9d4112ba935a226145cc31510ac0da69a
--! Hash: sha1:026e0191f3b9ed07f25146f4c7f65cbf2f3b7741
--! Message: Authorization costs what it did before issue 29: credentials looked up per hash and inlined, last use touched only when stale, the usage body built once

--! split: 1-current.sql
-- The authorization path of issue 29 cost every authorized request about 90 µs of Postgres CPU
-- (BENCH.md's foundation: GET /models 64 → 150 µs, its ratio to `select 1` 0.94 → 0.5):
-- - kiln_private.credentials matched the batch's hashes with `key_hash = any ($1)` under a generic
--   plan, which the planner ran as hash joins over seq scans of api_keys and accounts: every
--   batch read every key and every account (tested at 64 keys: Postgres CPU per GET /models
--   50 → 110 µs; at a hundred thousand keys it would have been far worse). It now looks up each
--   hash on its own (a lateral index lookup per hash), and without `set search_path` it is
--   inlined into its callers;
-- - kiln_private.touch_keys ran on every batch, an UPDATE that found nothing to write 59 times a
--   minute.
-- credentials (SQL, stable, no SET, every name schema-qualified; called only from functions that
-- set search_path themselves) also returns last_used_at, so a batch touches only the keys whose
-- stored last use is over a minute old.
drop function if exists kiln_private.credentials(bytea[]);
create function kiln_private.credentials(p_hashes bytea[])
  returns table(key_hash bytea, id uuid, account_id uuid, workspace_id uuid, scopes text[], rpm integer, tier text, last_used_at timestamptz)
  language sql stable
as $$
  -- One index lookup per hash, whatever the size of the tables: the current secret by the keys'
  -- unique hash index, else a rotation's grace secret by its own, then the account by its key.
  -- A secret is live while its key is: not revoked, not expired, a session not idle; a secret
  -- a rotation replaced also until its grace ends. The admin scope counts only for admins.
  select h.key_hash, k.id, k.account_id, k.workspace_id,
         case when a.is_admin or a.admin_by_group then k.scopes else pg_catalog.array_remove(k.scopes, 'admin'::text) end,
         k.rpm, a.tier, k.last_used_at
  from pg_catalog.unnest(p_hashes) as h(key_hash)
  cross join lateral (
    select x.id, x.account_id, x.workspace_id, x.scopes, x.rpm, x.last_used_at, x.created_at, x.revoked_at, x.expires_at, x.idle_seconds
    from kiln_private.api_keys x where x.key_hash operator(pg_catalog.=) h.key_hash
    union all
    select x.id, x.account_id, x.workspace_id, x.scopes, x.rpm, x.last_used_at, x.created_at, x.revoked_at, x.expires_at, x.idle_seconds
    from kiln_private.api_key_grace g join kiln_private.api_keys x on x.id operator(pg_catalog.=) g.key_id
    where g.key_hash operator(pg_catalog.=) h.key_hash and g.expires_at operator(pg_catalog.>) pg_catalog.now()
  ) k
  join kiln_private.accounts a on a.id operator(pg_catalog.=) k.account_id
  where k.revoked_at is null
    and (k.expires_at is null or k.expires_at operator(pg_catalog.>) pg_catalog.now())
    and (k.idle_seconds is null
         or coalesce(k.last_used_at, k.created_at) operator(pg_catalog.+) pg_catalog.make_interval(secs => k.idle_seconds) operator(pg_catalog.>) pg_catalog.now());
$$;
revoke all on function kiln_private.credentials(bytea[]) from public;
comment on function kiln_private.credentials(bytea[]) is 'The live credentials (API keys and console sessions) among SHA-256 hashes, with each key''s stored last use: revoked, expired, idle sessions and secrets past their rotation grace are absent, so they all get the same 401. Inlined into its callers (no SET clause): every name is schema-qualified.';

CREATE OR REPLACE FUNCTION kiln.authorize_requests(p_key_hashes bytea[], p_scopes text[], p_buckets text[], p_bucket_rpms integer[], p_with_usage boolean[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, usage text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET lock_timeout TO '2s'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
declare
  v_stale uuid[];
  v_n int := coalesce(cardinality(p_key_hashes), 0);
  v_now timestamptz := clock_timestamp();
  v_hash bytea[];
  v_id uuid[];
  v_account uuid[];
  v_workspace uuid[];
  v_scope text[];
  v_rpm int[];
  v_tier text[];
  v_at int[] := '{}';      -- per request: index of its key in the v_* arrays (0 = unknown)
  v_bkey text[] := '{}';   -- per request: its one bucket (null = none)
  v_lim int[] := '{}';
  v_keys text[] := '{}';   -- distinct buckets of the batch
  v_limits int[] := '{}';
  v_admitted text[];
  v_i int;
  v_j int;
  v_b text;
  v_usage_ords int[] := '{}';
begin
  if v_n = 0 then
    return;
  end if;
  -- Every key of the batch in one index scan; always a fresh read (revocation is immediate).
  select array_agg(k.key_hash), array_agg(k.id), array_agg(k.account_id), array_agg(k.workspace_id),
         array_agg(array_to_string(k.scopes, ',')), array_agg(k.rpm), array_agg(k.tier),
         array_agg(k.id) filter (where k.last_used_at is null or k.last_used_at < v_now - interval '1 minute')
    into v_hash, v_id, v_account, v_workspace, v_scope, v_rpm, v_tier, v_stale
    from kiln_private.credentials(p_key_hashes) k;
  -- Last use, to the minute: at most one write per key a minute, never a wait (skip locked).
  -- Only keys whose stored last use is over a minute old (read with the credentials): most
  -- batches write nothing and run no statement for it.
  if v_stale is not null then
    perform kiln_private.touch_keys(v_stale, v_now);
  end if;


  for v_i in 1 .. v_n loop
    v_j := coalesce(array_position(v_hash, p_key_hashes[v_i]), 0);
    v_at[v_i] := v_j;
    v_b := null;
    if v_j > 0 and (position(p_scopes[v_i] in v_scope[v_j]) > 0 or (p_scopes[v_i] = 'read' and position('write' in v_scope[v_j]) > 0)) then
      if v_rpm[v_j] is not null then
        if p_buckets[v_i] is not null then
          -- Two buckets for one request: the general path decides all-or-nothing.
          return query select * from kiln_private.authorize_batch_locked(p_key_hashes, p_scopes, p_buckets, p_bucket_rpms, p_with_usage);
          return;
        end if;
        v_b := 'key:' || v_id[v_j];
        v_lim[v_i] := v_rpm[v_j];
      elsif p_buckets[v_i] = 'read' then
        v_b := 'read:' || v_id[v_j];
        v_lim[v_i] := p_bucket_rpms[v_i];
      elsif p_buckets[v_i] = 'transform' then
        v_b := 'transform:' || v_account[v_j];
        v_lim[v_i] := p_bucket_rpms[v_i];
      elsif p_buckets[v_i] is not null then
        raise exception 'unknown bucket %', p_buckets[v_i] using errcode = '22023';
      end if;
      if v_b is not null then
        if v_b = any (v_keys) then
          -- A bucket shared within the batch: admissions depend on each other.
          return query select * from kiln_private.authorize_batch_locked(p_key_hashes, p_scopes, p_buckets, p_bucket_rpms, p_with_usage);
          return;
        end if;
        v_keys := v_keys || v_b;
        v_limits := v_limits || v_lim[v_i];
      end if;
    elsif v_j > 0 then
      v_at[v_i] := -v_j;  -- authenticated, wrong scope
    end if;
    v_bkey[v_i] := v_b;
  end loop;

  -- Independent buckets: one upsert creates, decides and debits them all (GCRA: T = 60 s / N,
  -- burst N), locking rows in key order like the general path.
  if cardinality(v_keys) > 0 then
    with admitted as (
      insert into kiln_private.rate_limit_buckets as t (key, tat)
        select u.key, v_now + make_interval(secs => 60.0 / u.lim)
        from unnest(v_keys, v_limits) as u(key, lim)
        order by u.key
      on conflict (key) do update
        -- excluded.tat - v_now is the bucket's emission interval T.
        set tat = greatest(t.tat, v_now) + (excluded.tat - v_now)
        where greatest(t.tat, v_now) + (excluded.tat - v_now) - v_now <= interval '60 seconds'
      returning t.key)
    select array_agg(a.key) into v_admitted from admitted a;
  end if;

  for v_i in 1 .. v_n loop
    ord := v_i;
    v_j := abs(v_at[v_i]);
    usage := null;
    if v_j = 0 then
      status := 'unauthorized'; key_id := null; account_id := null; workspace_id := null;
      tier := null; scopes := null; retry_after := null;
      return next;
      continue;
    end if;
    key_id := v_id[v_j];
    account_id := v_account[v_j];
    workspace_id := v_workspace[v_j];
    tier := v_tier[v_j];
    scopes := string_to_array(v_scope[v_j], ',');
    if v_at[v_i] < 0 then
      status := 'insufficient_scope';
      retry_after := null;
    elsif v_bkey[v_i] is null or v_bkey[v_i] = any (v_admitted) then
      status := 'ok';
      retry_after := 0;
      if p_with_usage[v_i] then
        -- Rendered below with the GET /usage body, for all such requests in one query.
        v_usage_ords := v_usage_ords || v_i;
        continue;
      end if;
    else
      status := 'rate_limited';
      -- The bucket's TAT read afresh; rounded up, so waiting this long always finds room.
      select greatest(1, ceil(extract(epoch from (
               greatest(t.tat, v_now) + make_interval(secs => 60.0 / v_lim[v_i]) - v_now - interval '60 seconds')))::int)
        into retry_after from kiln_private.rate_limit_buckets t where t.key = v_bkey[v_i];
    end if;
    return next;
  end loop;

  if cardinality(v_usage_ords) > 0 then
    return query
      select o.i::int, 'ok'::text, v_id[v_at[o.i]], v_account[v_at[o.i]], v_workspace[v_at[o.i]], v_tier[v_at[o.i]],
             string_to_array(v_scope[v_at[o.i]], ','), 0, u.usage::text
      from unnest(v_usage_ords) as o(i)
      left join lateral kiln_private.usage_rows(v_account[v_at[o.i]], v_workspace[v_at[o.i]], v_id[v_at[o.i]]) u on true;
  end if;
end;
$function$;

CREATE OR REPLACE FUNCTION kiln_private.authorize_batch_locked(p_key_hashes bytea[], p_scopes text[], p_buckets text[], p_bucket_rpms integer[], p_with_usage boolean[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, usage text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET lock_timeout TO '2s'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
declare
  v_stale uuid[];
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
         array_agg(array_to_string(k.scopes, ',')), array_agg(k.rpm), array_agg(k.tier),
         array_agg(k.id) filter (where k.last_used_at is null or k.last_used_at < v_now - interval '1 minute')
    into v_f_hash, v_f_id, v_f_account, v_f_workspace, v_f_scopes, v_f_rpm, v_f_tier, v_stale
    from kiln_private.credentials(p_key_hashes) k;
  -- Last use, to the minute: at most one write per key a minute, never a wait (skip locked).
  -- Only keys whose stored last use is over a minute old (read with the credentials): most
  -- batches write nothing and run no statement for it.
  if v_stale is not null then
    perform kiln_private.touch_keys(v_stale, v_now);
  end if;

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
      left join lateral kiln_private.usage_rows(v_accounts[o.i], v_workspaces[o.i], v_key_ids[o.i]) u on true;
  end if;

  if not v_fast and v_bkeys is not null and true = any (v_dirty) then
    update kiln_private.rate_limit_buckets b
      set tat = v_btats[array_position(v_bkeys, b.key)]
      where b.key = any (v_bkeys) and v_dirty[array_position(v_bkeys, b.key)];
  end if;
end;
$function$;
comment on function kiln_private.authorize_batch_locked(bytea[],text[],text[],integer[],boolean[]) is 'The general path of kiln.authorize_requests: every bucket of the batch locked in key order, admissions decided in arrival order in memory, each touched bucket written once.';


-- GET /usage (kiln.get_usage and the authorizing calls' usage bodies) spent ~150 µs turning the
-- body into jsonb and back to add the key's three fields: one json_build_object again, the two-
-- argument body's fields followed by the key's.
create or replace function kiln_private.usage_rows(p_account_id uuid, p_workspace_id uuid, p_key_id uuid)
  returns table(usage json)
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
                                then to_char((ws.period + interval '1 month') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') end,
    'key_budget_micros', k.budget_micros,
    'key_used_micros', case when k.budget_micros is not null then coalesce(kb.held_micros + kb.settled_micros, 0) end,
    'key_remaining_micros', case when k.budget_micros is not null then greatest(k.budget_micros - coalesce(kb.held_micros + kb.settled_micros, 0), 0) end)
  from (select a.id, a.tier, a.budget_micros, kiln_private.period_start(a.period_anchor, now()) as period
        from kiln_private.accounts a where a.id = p_account_id) acct
  left join kiln_private.budget_periods bp on bp.pool_id = acct.id and bp.period_start = acct.period
  left join (select w.id, w.plan_budget_micros, kiln_private.period_start(w.plan_period_anchor, now()) as period
             from kiln_private.workspaces w
             where w.id = p_workspace_id and w.plan_status = 'active'
               and exists (select 1 from kiln_private.workspace_members m
                           where m.workspace_id = w.id and m.account_id = p_account_id and m.left_at is null)) ws on true
  left join kiln_private.budget_periods wbp on wbp.pool_id = ws.id and wbp.period_start = ws.period
  left join kiln_private.api_keys k on k.id = p_key_id
  -- A personal key's period is its account's, computed above; a workspace key's, its workspace's.
  left join kiln_private.key_budget_periods kb
    on kb.key_id = k.id
   and kb.period_start = case when k.workspace_id is null and k.account_id = acct.id then acct.period
                              else kiln_private.key_period(k.account_id, k.workspace_id) end;
$$;
comment on function kiln_private.usage_rows(uuid,uuid,uuid) is 'The GET /usage body as one row (none when the account does not exist), with the calling key''s own budget (key_budget_micros, key_used_micros, key_remaining_micros; null when the key has none); inlined by the planner into callers.';
