-- functions/kiln_private.authorize_batch_locked.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.authorize_batch_locked.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

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
