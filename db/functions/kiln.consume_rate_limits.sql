-- functions/kiln.consume_rate_limits.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.consume_rate_limits.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.consume_rate_limits(p_keys text[], p_limits integer[])
 RETURNS integer
 LANGUAGE plpgsql
 SET lock_timeout TO '2s'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
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
$function$;
comment on function kiln.consume_rate_limits(text[],integer[]) is 'GCRA on the database clock: admits one request against every bucket (N per minute, burst N) or none. Returns 0 when admitted, else retry-after in whole seconds (rounded up).';
