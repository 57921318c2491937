-- functions/kiln.authorize_requests.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.authorize_requests.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

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
comment on function kiln.authorize_requests(bytea[],text[],text[],integer[],boolean[]) is 'Authenticates a batch of API keys by SHA-256 hash, checks scopes and applies GCRA rate limits (the key''s custom rpm bucket and the endpoint bucket; all or none per request) in arrival order, in one transaction; optionally returns the GET /usage body. Batches whose buckets are independent are decided by one upsert; the rest by kiln_private.authorize_batch_locked.';
