--! Previous: sha1:c276d6c916a1d3c96ca3c937bbc1a0a73610c814
--! Hash: sha1:3748452b19412f4dcce3aa980fcdb7ea88a9205e
--! Message: Keys people manage (expiry, rotation under one id, last use, own budgets), console sessions as credentials, admins, and an append-only audit log written by triggers

--! split: 1-current.sql
-- Accounts that run themselves (issue 29): keys with expiry, rotation (several secrets under one
-- id), last use and their own budget; console sessions as credentials of the same kind; admins;
-- and an append-only audit log written by triggers in the transaction that makes each change.

-- 1. Keys and sessions --------------------------------------------------------------------------

alter table kiln_private.accounts
  add column if not exists is_admin boolean not null default false,
  add column if not exists admin_by_group boolean not null default false;
comment on column kiln_private.accounts.is_admin is 'Set by an operator (kiln user set --admin): the user may use the admin routes.';
comment on column kiln_private.accounts.admin_by_group is 'The user''s last SSO sign-in carried KILN_OIDC_ADMIN_GROUP in its groups claim (refreshed at each sign-in).';

alter table kiln_private.api_keys
  add column if not exists kind text not null default 'key',
  add column if not exists expires_at timestamptz,
  add column if not exists last_used_at timestamptz,
  add column if not exists budget_micros bigint,
  add column if not exists idle_seconds integer,
  add column if not exists rotated_at timestamptz,
  add column if not exists expiry_recorded boolean not null default false;
alter table kiln_private.api_keys drop constraint if exists api_keys_scopes_check;
alter table kiln_private.api_keys add constraint api_keys_scopes_check
  check (scopes <@ array['read', 'write', 'keys', 'admin'] and cardinality(scopes) > 0);
alter table kiln_private.api_keys drop constraint if exists api_keys_kind_check;
alter table kiln_private.api_keys add constraint api_keys_kind_check check (kind in ('key', 'session'));
alter table kiln_private.api_keys drop constraint if exists api_keys_budget_micros_check;
alter table kiln_private.api_keys add constraint api_keys_budget_micros_check check (budget_micros >= 0);
alter table kiln_private.api_keys drop constraint if exists api_keys_idle_seconds_check;
alter table kiln_private.api_keys add constraint api_keys_idle_seconds_check check (idle_seconds > 0);
alter table kiln_private.api_keys drop constraint if exists api_keys_name_check;
alter table kiln_private.api_keys add constraint api_keys_name_check check (length(name) <= 200);
comment on column kiln_private.api_keys.kind is 'key: an API key; session: a console session made by an SSO sign-in (its cookie is the secret; idle_seconds applies).';
comment on column kiln_private.api_keys.key_hash is 'SHA-256 of the current secret. A rotation moves the previous one to kiln_private.api_key_grace.';
comment on column kiln_private.api_keys.last_used_at is 'Last authenticated use, to the minute (written at most once a minute per key).';
comment on column kiln_private.api_keys.budget_micros is 'The key''s own budget per billing period of its scope (null = only the pool''s); kept in kiln_private.key_budget_periods.';
comment on column kiln_private.api_keys.expiry_recorded is 'key.expired has been written to the audit log.';
create index if not exists api_keys_workspace_idx on kiln_private.api_keys (workspace_id) where workspace_id is not null;
create index if not exists api_keys_expiry_idx on kiln_private.api_keys (expires_at) where expires_at is not null and not expiry_recorded;

create table if not exists kiln_private.api_key_grace (
  key_hash bytea not null primary key check (length(key_hash) = 32),
  key_id uuid not null references kiln_private.api_keys (id),
  display_prefix text not null,
  expires_at timestamptz not null
);
comment on table kiln_private.api_key_grace is 'Secrets a rotation replaced, valid under their key''s id until expires_at (the rotation''s grace); a revoked or expired key ends them too.';
create index if not exists api_key_grace_key_idx on kiln_private.api_key_grace (key_id);

create table if not exists kiln_private.key_budget_periods (
  key_id uuid not null references kiln_private.api_keys (id),
  period_start timestamptz not null,
  held_micros bigint not null default 0 check (held_micros >= 0),
  settled_micros bigint not null default 0 check (settled_micros >= 0),
  primary key (key_id, period_start)
);
comment on table kiln_private.key_budget_periods is 'Running totals of keys with their own budget, per period of the key''s scope; debited in the same statement as the pool (kiln_private.reserve_budgets) and ended with it (settle_charge, release_charge).';

alter table kiln_private.charges add column if not exists key_pool boolean not null default false;
comment on column kiln_private.charges.key_pool is 'The reservation is also held on its key''s own budget (kiln_private.key_budget_periods).';

create or replace function kiln_private.credentials(p_hashes bytea[])
 returns table (key_hash bytea, id uuid, account_id uuid, workspace_id uuid, scopes text[], rpm integer, tier text)
 language sql
 stable
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  -- A secret is live while its key is: not revoked, not expired, a session not idle; a secret
  -- a rotation replaced also until its grace ends. The admin scope counts only for admins.
  select c.key_hash, k.id, k.account_id, k.workspace_id,
         case when a.is_admin or a.admin_by_group then k.scopes else array_remove(k.scopes, 'admin') end,
         k.rpm, a.tier
  from (select k.key_hash, k.id from kiln_private.api_keys k where k.key_hash = any (p_hashes)
        union all
        select g.key_hash, g.key_id from kiln_private.api_key_grace g where g.key_hash = any (p_hashes) and g.expires_at > now()) c
  join kiln_private.api_keys k on k.id = c.id
  join kiln_private.accounts a on a.id = k.account_id
  where k.revoked_at is null
    and (k.expires_at is null or k.expires_at > now())
    and (k.idle_seconds is null or coalesce(k.last_used_at, k.created_at) + make_interval(secs => k.idle_seconds) > now());
$function$;
comment on function kiln_private.credentials(bytea[]) is 'The live credentials (API keys and console sessions) among SHA-256 hashes: revoked, expired, idle sessions and secrets past their rotation grace are absent, so they all get the same 401.';

create or replace function kiln_private.touch_keys(p_ids uuid[], p_at timestamptz)
 returns void
 language sql
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  update kiln_private.api_keys k set last_used_at = p_at
  where k.id in (select x.id from kiln_private.api_keys x
                 where x.id = any (p_ids) and (x.last_used_at is null or x.last_used_at < p_at - interval '1 minute')
                 for no key update skip locked);
$function$;
comment on function kiln_private.touch_keys(uuid[],timestamp with time zone) is 'Records the keys'' last use when the stored one is over a minute old: at most one write per key a minute, and never a wait (rows another transaction holds are skipped).';

create or replace function kiln_private.debit_key_pools(p_keys uuid[], p_periods timestamptz[], p_amounts bigint[], p_budgets bigint[])
 returns uuid[]
 language sql
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  -- kiln_private.debit_pools for keys' own budgets: keys locked in id order.
  with debited as (
    insert into kiln_private.key_budget_periods as b (key_id, period_start, held_micros)
      select u.k, u.period, u.amount
      from unnest(p_keys, p_periods, p_amounts, p_budgets) as u(k, period, amount, budget)
      where u.budget is null or u.amount <= u.budget
      order by u.k
    on conflict (key_id, period_start) do update
      set held_micros = b.held_micros + excluded.held_micros
      where p_budgets[array_position(p_keys, b.key_id)] is null
         or b.held_micros + b.settled_micros + excluded.held_micros <= p_budgets[array_position(p_keys, b.key_id)]
    returning b.key_id)
  select coalesce(array_agg(key_id), '{}') from debited;
$function$;
comment on function kiln_private.debit_key_pools(uuid[],timestamp with time zone[],bigint[],bigint[]) is 'Adds each amount to its key''s held total for the period when settled + held stays within the key''s budget, keys in id order; returns the keys debited.';

create or replace function kiln_private.key_period(p_account_id uuid, p_workspace_id uuid)
 returns timestamptz
 language sql
 stable
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  select kiln_private.period_start(case when p_workspace_id is null then a.period_anchor else w.plan_period_anchor end, now())
  from kiln_private.accounts a left join kiln_private.workspaces w on w.id = p_workspace_id
  where a.id = p_account_id;
$function$;
comment on function kiln_private.key_period(uuid,uuid) is 'Start of the current billing period of a key''s scope (its workspace''s, else its account''s).';

create or replace function kiln_private.usage_rows(p_account_id uuid, p_workspace_id uuid, p_key_id uuid)
 returns table(usage json)
 language sql
 stable
as $function$
  select (u.usage::jsonb || jsonb_build_object(
    'key_budget_micros', k.budget_micros,
    'key_used_micros', case when k.budget_micros is not null then coalesce(kb.held_micros + kb.settled_micros, 0) end,
    'key_remaining_micros', case when k.budget_micros is not null then greatest(k.budget_micros - coalesce(kb.held_micros + kb.settled_micros, 0), 0) end))::json
  from kiln_private.usage_rows(p_account_id, p_workspace_id) u
  left join kiln_private.api_keys k on k.id = p_key_id
  left join kiln_private.key_budget_periods kb
    on kb.key_id = k.id and kb.period_start = kiln_private.key_period(k.account_id, k.workspace_id);
$function$;
comment on function kiln_private.usage_rows(uuid,uuid,uuid) is 'The GET /usage body with the calling key''s own budget (key_budget_micros, key_used_micros, key_remaining_micros; null when the key has none).';


-- The authorization path reads kiln_private.credentials; reservations hold key budgets too.

CREATE OR REPLACE FUNCTION kiln.authorize_requests(p_key_hashes bytea[], p_scopes text[], p_buckets text[], p_bucket_rpms integer[], p_with_usage boolean[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, usage text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET lock_timeout TO '2s'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
declare
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
         array_agg(array_to_string(k.scopes, ',')), array_agg(k.rpm), array_agg(k.tier)
    into v_hash, v_id, v_account, v_workspace, v_scope, v_rpm, v_tier
    from kiln_private.credentials(p_key_hashes) k;
  -- Last use, to the minute: at most one write per key a minute, never a wait (skip locked).
  perform kiln_private.touch_keys(v_id, v_now);


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
         array_agg(array_to_string(k.scopes, ',')), array_agg(k.rpm), array_agg(k.tier)
    into v_f_hash, v_f_id, v_f_account, v_f_workspace, v_f_scopes, v_f_rpm, v_f_tier
    from kiln_private.credentials(p_key_hashes) k;
  -- Last use, to the minute: at most one write per key a minute, never a wait (skip locked).
  perform kiln_private.touch_keys(v_f_id, v_now);

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

CREATE OR REPLACE FUNCTION kiln_private.reserve_budgets(p_account_ids uuid[], p_workspace_ids uuid[], p_key_ids uuid[], p_model_ids text[], p_origins text[], p_amounts bigint[], p_generation_ids uuid[], p_run_ids uuid[], p_node_ids text[])
 RETURNS TABLE(ord integer, charge_id uuid, error_code text, error_message text)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_column
declare
  v_n int := coalesce(cardinality(p_account_ids), 0);
  c_err text[];
  c_msg text[];
  c_pool uuid[];
  c_budget bigint[];
  c_kbudget bigint[];
  c_period timestamptz[];
  c_id uuid[];
  v_pools uuid[];
  v_periods timestamptz[];
  v_totals bigint[];
  v_budgets bigint[];
  v_admitted uuid[];
  v_kadmitted uuid[] := '{}';
  v_i int;
begin
  if v_n = 0 then
    return;
  end if;
  -- 1. The reservation rules, for the whole set; each request gets its pool, budget and period,
  --    and its key's own budget (null = the key has none: only the pool decides).
  select array_agg(x.err order by x.i), array_agg(x.msg order by x.i), array_agg(x.pool order by x.i),
         array_agg(x.budget order by x.i), array_agg(x.kbudget order by x.i), array_agg(x.period order by x.i),
         array_agg(kiln_private.uuid_v7() order by x.i)
    into c_err, c_msg, c_pool, c_budget, c_kbudget, c_period, c_id
    from (
      select s.i,
             case
               when p_amounts[s.i] is null or p_amounts[s.i] < 0 then '22023'
               when acc.id is null then 'KN001'
               when acc.tier = 'blocked' then 'KQ001'
               when p_workspace_ids[s.i] is not null and (ws.id is null or ws.plan_status <> 'active') then 'KP001'
               when p_workspace_ids[s.i] is not null and mem.account_id is null then 'KP001'
             end as err,
             case
               when p_amounts[s.i] is null or p_amounts[s.i] < 0 then 'reservation must be a non-negative amount'
               when acc.id is null then 'account not found'
               when acc.tier = 'blocked' then 'this account cannot start generations'
               when p_workspace_ids[s.i] is not null and (ws.id is null or ws.plan_status <> 'active') then 'the workspace''s Team plan is not active'
               when p_workspace_ids[s.i] is not null and mem.account_id is null then 'the key''s owner is no longer a member of the workspace'
             end as msg,
             case when p_workspace_ids[s.i] is null then acc.id else ws.id end as pool,
             case when p_workspace_ids[s.i] is null then acc.budget_micros else ws.plan_budget_micros end as budget,
             k.budget_micros as kbudget,
             kiln_private.period_start(case when p_workspace_ids[s.i] is null then acc.period_anchor else ws.plan_period_anchor end, now()) as period
      from generate_subscripts(p_account_ids, 1) as s(i)
      left join kiln_private.accounts acc on acc.id = p_account_ids[s.i]
      left join kiln_private.workspaces ws on ws.id = p_workspace_ids[s.i]
      left join kiln_private.workspace_members mem
        on mem.workspace_id = p_workspace_ids[s.i] and mem.account_id = p_account_ids[s.i] and mem.left_at is null
      left join kiln_private.api_keys k on k.id = p_key_ids[s.i]
    ) x;

  -- 2. One check-and-debit per pool for the set's total, then one per key budget: the same
  --    transaction, so a request holds both or (below) neither.
  select array_agg(t.pool order by t.pool), array_agg(t.period order by t.pool), array_agg(t.total order by t.pool),
         array_agg(t.budget order by t.pool)
    into v_pools, v_periods, v_totals, v_budgets
    from (select c_pool[s.i] as pool, min(c_period[s.i]) as period, sum(p_amounts[s.i])::bigint as total, min(c_budget[s.i]) as budget
          from generate_subscripts(p_account_ids, 1) as s(i) where c_err[s.i] is null group by 1) t;
  v_admitted := case when v_pools is null then '{}' else kiln_private.debit_pools(v_pools, v_periods, v_totals, v_budgets) end;
  select array_agg(t.k order by t.k), array_agg(t.period order by t.k), array_agg(t.total order by t.k),
         array_agg(t.budget order by t.k)
    into v_pools, v_periods, v_totals, v_budgets
    from (select p_key_ids[s.i] as k, min(c_period[s.i]) as period, sum(p_amounts[s.i])::bigint as total, min(c_kbudget[s.i]) as budget
          from generate_subscripts(p_account_ids, 1) as s(i) where c_err[s.i] is null and c_kbudget[s.i] is not null group by 1) t;
  if v_pools is not null then
    v_kadmitted := kiln_private.debit_key_pools(v_pools, v_periods, v_totals, v_budgets);
  end if;

  -- 3. A request whose pool or key budget could not take the set's total gives back what the
  --    other debited for it, then is decided on its own, in arrival order. Row locks are already
  --    held by this transaction, so nobody sees the amounts in between.
  for v_i in
    select s.i from generate_subscripts(p_account_ids, 1) as s(i)
    where c_err[s.i] is null
      and (not (c_pool[s.i] = any (v_admitted)) or (c_kbudget[s.i] is not null and not (p_key_ids[s.i] = any (v_kadmitted))))
    order by s.i
  loop
    if c_pool[v_i] = any (v_admitted) then
      update kiln_private.budget_periods set held_micros = held_micros - p_amounts[v_i]
        where pool_id = c_pool[v_i] and period_start = c_period[v_i];
    end if;
    if c_kbudget[v_i] is not null and p_key_ids[v_i] = any (v_kadmitted) then
      update kiln_private.key_budget_periods set held_micros = held_micros - p_amounts[v_i]
        where key_id = p_key_ids[v_i] and period_start = c_period[v_i];
    end if;
  end loop;
  for v_i in
    select s.i from generate_subscripts(p_account_ids, 1) as s(i)
    where c_err[s.i] is null
      and (not (c_pool[s.i] = any (v_admitted)) or (c_kbudget[s.i] is not null and not (p_key_ids[s.i] = any (v_kadmitted))))
    order by c_pool[s.i], s.i
  loop
    if cardinality(kiln_private.debit_pools(array[c_pool[v_i]], array[c_period[v_i]], array[p_amounts[v_i]], array[c_budget[v_i]])) = 0 then
      c_err[v_i] := 'KQ001';
      c_msg[v_i] := 'the budget for this period is exhausted';
    elsif c_kbudget[v_i] is not null
          and cardinality(kiln_private.debit_key_pools(array[p_key_ids[v_i]], array[c_period[v_i]], array[p_amounts[v_i]], array[c_kbudget[v_i]])) = 0 then
      update kiln_private.budget_periods set held_micros = held_micros - p_amounts[v_i]
        where pool_id = c_pool[v_i] and period_start = c_period[v_i];
      c_err[v_i] := 'KQ001';
      c_msg[v_i] := 'this key''s budget for this period is exhausted';
    end if;
  end loop;

  -- 4. The ledger: one reserved charge per request that got its reservation.
  insert into kiln_private.charges
    (id, account_id, workspace_id, pool_id, period_start, key_id, model_id, origin, reserved_micros,
     generation_id, workflow_run_id, node_id, key_pool)
  select c_id[s.i], p_account_ids[s.i], p_workspace_ids[s.i], c_pool[s.i], c_period[s.i], p_key_ids[s.i], p_model_ids[s.i],
         p_origins[s.i], p_amounts[s.i], p_generation_ids[s.i], p_run_ids[s.i], p_node_ids[s.i], c_kbudget[s.i] is not null
  from generate_subscripts(p_account_ids, 1) as s(i)
  where c_err[s.i] is null;

  return query
    select s.i::int, case when c_err[s.i] is null then c_id[s.i] end, c_err[s.i], c_msg[s.i]
    from generate_subscripts(p_account_ids, 1) as s(i)
    order by s.i;
end;
$function$;

CREATE OR REPLACE FUNCTION kiln.settle_charge(p_charge_id uuid, p_amount_micros bigint)
 RETURNS kiln_private.charges
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_charge kiln_private.charges;
  v_amount bigint;
begin
  select * into v_charge from kiln_private.charges where id = p_charge_id for update;
  if not found then
    raise exception 'charge not found' using errcode = 'KN001';
  end if;
  if v_charge.status <> 'reserved' then
    -- Idempotent: a retried or duplicated job never charges twice.
    return v_charge;
  end if;
  -- Settlement never exceeds the reservation.
  v_amount := least(greatest(coalesce(p_amount_micros, 0), 0), v_charge.reserved_micros);
  update kiln_private.budget_periods
    set held_micros = held_micros - v_charge.reserved_micros,
        settled_micros = settled_micros + v_amount
    where pool_id = v_charge.pool_id and period_start = v_charge.period_start;
  if v_charge.key_pool then
    update kiln_private.key_budget_periods
      set held_micros = held_micros - v_charge.reserved_micros,
          settled_micros = settled_micros + v_amount
      where key_id = v_charge.key_id and period_start = v_charge.period_start;
  end if;
  update kiln_private.charges
    set status = 'settled', settled_micros = v_amount, finished_at = now()
    where id = p_charge_id
    returning * into v_charge;
  return v_charge;
end;
$function$;

CREATE OR REPLACE FUNCTION kiln.release_charge(p_charge_id uuid)
 RETURNS kiln_private.charges
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_charge kiln_private.charges;
begin
  select * into v_charge from kiln_private.charges where id = p_charge_id for update;
  if not found then
    raise exception 'charge not found' using errcode = 'KN001';
  end if;
  if v_charge.status <> 'reserved' then
    return v_charge;
  end if;
  update kiln_private.budget_periods
    set held_micros = held_micros - v_charge.reserved_micros
    where pool_id = v_charge.pool_id and period_start = v_charge.period_start;
  if v_charge.key_pool then
    update kiln_private.key_budget_periods
      set held_micros = held_micros - v_charge.reserved_micros
      where key_id = v_charge.key_id and period_start = v_charge.period_start;
  end if;
  update kiln_private.charges
    set status = 'released', finished_at = now()
    where id = p_charge_id
    returning * into v_charge;
  return v_charge;
end;
$function$;

comment on function kiln_private.reserve_budgets(uuid[],uuid[],uuid[],text[],text[],bigint[],uuid[],uuid[],text[]) is 'Reserves the worst-case cost of each request on its personal pool or, for workspace-bound calls, its Team pool, and on its key''s own budget when the key has one, in the same step, and writes its ledger row: one check-and-debit per pool and per key for the set''s total, request by request in arrival order where either cannot take it. Each row carries the charge id or the request''s own refusal: 22023 (bad amount), KN001 (no account), KQ001 (blocked tier, budget or key budget exhausted), KP001 (plan not active, caller left the workspace).';

-- 2. The audit log ----------------------------------------------------------------------------

create table if not exists kiln_private.audit_log (
  id uuid not null default kiln_private.uuid_v7() primary key,
  at timestamptz not null default now(),
  scope_id uuid,
  actor_type text not null check (actor_type in ('key', 'session', 'operator', 'identity')),
  actor_id text check (length(actor_id) <= 200),
  action text not null check (action ~ '^[a-z_]+\.[a-z_]+$'),
  target_type text not null check (target_type ~ '^[a-z_]+$'),
  target_id text check (length(target_id) <= 400),
  ip inet,
  request_id text check (length(request_id) <= 200),
  details jsonb not null default '{}'
);
comment on table kiln_private.audit_log is 'Who changed what, append-only: one row per change to keys, sessions, webhooks, workflows, accounts, workspaces and the catalog, written in the transaction that makes it. scope_id is the billing scope it belongs to (an account or a workspace; null = the service: the catalog, a refused sign-in). Never holds a secret.';
create index if not exists audit_log_scope_idx on kiln_private.audit_log (scope_id, id desc);
create index if not exists audit_log_id_idx on kiln_private.audit_log (id desc);
create index if not exists audit_log_at_idx on kiln_private.audit_log (at);

create or replace function kiln_private.audit(p_scope_id uuid, p_action text, p_target_type text, p_target_id text, p_details jsonb default '{}')
 returns void
 language plpgsql
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  -- The request that makes the change names itself in a transaction-local setting (set_config
  -- ..., true: safe behind a transaction pooler); without one, the change is an operator's.
  v_actor jsonb := nullif(current_setting('kiln.actor', true), '')::jsonb;
begin
  insert into kiln_private.audit_log (scope_id, actor_type, actor_id, action, target_type, target_id, ip, request_id, details)
  values (p_scope_id, coalesce(v_actor->>'type', 'operator'),
          coalesce(v_actor->>'id', session_user::text),
          p_action, p_target_type, p_target_id,
          case when v_actor->>'ip' ~ '^[0-9a-fA-F:.]{2,45}$' then (v_actor->>'ip')::inet end,
          left(v_actor->>'requestId', 200), coalesce(p_details, '{}'));
exception
  when invalid_text_representation then
    insert into kiln_private.audit_log (scope_id, actor_type, actor_id, action, target_type, target_id, details)
    values (p_scope_id, coalesce(v_actor->>'type', 'operator'), coalesce(v_actor->>'id', session_user::text),
            p_action, p_target_type, p_target_id, coalesce(p_details, '{}'));
end;
$function$;
comment on function kiln_private.audit(uuid,text,text,text,jsonb) is 'Appends one audit entry; the actor, IP and request id come from the transaction-local setting kiln.actor (JSON: type, id, ip, requestId) and default to the operator (the database user).';

create or replace function kiln_private.tg_audit_log__append_only()
 returns trigger
 language plpgsql
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
begin
  if tg_op = 'DELETE' and current_setting('kiln.audit_purge', true) = 'on' then
    return old;
  end if;
  raise exception 'the audit log is append-only' using errcode = 'KF001';
end;
$function$;
comment on function kiln_private.tg_audit_log__append_only() is 'Trigger: refuses UPDATE, DELETE and TRUNCATE of the audit log, except the retention purge''s deletes (kiln.purge_audit_log).';
drop trigger if exists tg_audit_log__append_only on kiln_private.audit_log;
create trigger tg_audit_log__append_only before update or delete on kiln_private.audit_log
  for each row execute function kiln_private.tg_audit_log__append_only();
drop trigger if exists tg_audit_log__no_truncate on kiln_private.audit_log;
create trigger tg_audit_log__no_truncate before truncate on kiln_private.audit_log
  for each statement execute function kiln_private.tg_audit_log__append_only();

create or replace function kiln.purge_audit_log(p_before timestamptz, p_limit integer default 10000)
 returns integer
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_n int;
begin
  perform set_config('kiln.audit_purge', 'on', true);
  delete from kiln_private.audit_log where id in (
    select id from kiln_private.audit_log where at < p_before order by at limit p_limit);
  get diagnostics v_n = row_count;
  perform set_config('kiln.audit_purge', 'off', true);
  return v_n;
end;
$function$;
comment on function kiln.purge_audit_log(timestamp with time zone,integer) is 'The retention purge (KILN_AUDIT_RETENTION): deletes up to p_limit entries older than p_before, oldest first; the only delete the append-only trigger lets through.';

create or replace function kiln_private.audit_json(p kiln_private.audit_log)
 returns json
 language sql
 immutable
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  select json_build_object(
    'id', p.id, 'at', to_char(p.at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'actor', json_build_object('type', p.actor_type, 'id', p.actor_id),
    'action', p.action,
    'target', json_build_object('type', p.target_type, 'id', p.target_id),
    'ip', host(p.ip), 'requestId', p.request_id, 'details', p.details);
$function$;
comment on function kiln_private.audit_json(kiln_private.audit_log) is 'An audit entry as the API renders it.';

create or replace function kiln.list_audit(p_scope_id uuid, p_limit integer, p_before uuid, p_action text)
 returns json
 language sql
 stable
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  with page as (
    select l, l.id from kiln_private.audit_log l
    where l.scope_id is not distinct from p_scope_id
      and (p_before is null or l.id < p_before)
      and (p_action is null or l.action = p_action)
    order by l.id desc
    limit p_limit + 1)
  select json_build_object(
    'data', coalesce((select json_agg(kiln_private.audit_json(p.l) order by p.id desc)
                      from (select * from page order by id desc limit p_limit) p), '[]'),
    'nextCursor', case when (select count(*) from page) > p_limit
                       then (select id from page order by id desc offset p_limit - 1 limit 1) end);
$function$;
comment on function kiln.list_audit(uuid,integer,uuid,text) is 'A page of a billing scope''s audit entries, newest first (p_before = the previous page''s nextCursor), optionally of one action.';

create or replace view kiln.audit_log as
  select l.id, l.at, l.scope_id, l.actor_type, l.actor_id, l.action, l.target_type, l.target_id, l.ip, l.request_id, l.details
  from kiln_private.audit_log l;
comment on view kiln.audit_log is 'Analysts: who changed what (keys, sessions, webhooks, workflows, accounts, workspaces, the catalog), one row per change, append-only. No secrets.';

-- What each table's changes mean, in the audit log. Only changes to who may do what, and to what
-- they are: a key's last use, a webhook's delivery health or a workflow run's write-back is not.

create or replace function kiln_private.tg_api_keys__audit()
 returns trigger
 language plpgsql
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
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
             'rpm', new.rpm, 'budgetMicros', new.budget_micros, 'expiresAt', new.expires_at, 'workspaceId', new.workspace_id)
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
  if new.kind = 'key' and (old.scopes, old.rpm, old.budget_micros, old.expires_at, old.name, old.workspace_id)
       is distinct from (new.scopes, new.rpm, new.budget_micros, new.expires_at, new.name, new.workspace_id) then
    perform kiln_private.audit(v_scope, 'key.updated', 'key', new.id::text, jsonb_build_object(
      'scopes', new.scopes, 'rpm', new.rpm, 'budgetMicros', new.budget_micros, 'expiresAt', new.expires_at, 'name', new.name,
      'workspaceId', new.workspace_id));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_api_keys__audit() is 'Trigger: key.created / rotated / revoked / updated and session.created / deleted (sign-in and sign-out) in the audit log.';
drop trigger if exists tg_api_keys__audit on kiln_private.api_keys;
create trigger tg_api_keys__audit after insert or update of key_hash, revoked_at, scopes, rpm, budget_micros, expires_at, name, workspace_id
  on kiln_private.api_keys for each row execute function kiln_private.tg_api_keys__audit();

create or replace function kiln_private.tg_webhook_endpoints__audit()
 returns trigger
 language plpgsql
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
begin
  if tg_op = 'INSERT' then
    perform kiln_private.audit(new.scope_id, 'webhook.created', 'webhook', new.id::text,
      jsonb_build_object('url', new.url, 'events', new.events, 'description', new.description));
  elsif tg_op = 'DELETE' then
    perform kiln_private.audit(old.scope_id, 'webhook.deleted', 'webhook', old.id::text, jsonb_build_object('url', old.url));
  else
    if old.secret_enc is distinct from new.secret_enc then
      perform kiln_private.audit(new.scope_id, 'webhook.secret_rotated', 'webhook', new.id::text,
        jsonb_build_object('previousValidUntil', new.old_secret_until));
    end if;
    -- A disable by the delivery system (disabled_reason set) is the webhook's health, not a change by a person.
    if (old.url, old.events, old.description) is distinct from (new.url, new.events, new.description)
       or (old.enabled is distinct from new.enabled and new.disabled_reason is null) then
      perform kiln_private.audit(new.scope_id, 'webhook.updated', 'webhook', new.id::text,
        jsonb_build_object('url', new.url, 'events', new.events, 'description', new.description, 'enabled', new.enabled));
    end if;
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_webhook_endpoints__audit() is 'Trigger: webhook.created / updated / deleted / secret_rotated in the audit log (never the secret; an automatic disable is not an update).';
drop trigger if exists tg_webhook_endpoints__audit on kiln_private.webhook_endpoints;
create trigger tg_webhook_endpoints__audit after insert or delete or update of url, events, description, enabled, secret_enc
  on kiln_private.webhook_endpoints for each row execute function kiln_private.tg_webhook_endpoints__audit();

create or replace function kiln_private.tg_workflows__audit()
 returns trigger
 language plpgsql
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
begin
  if new.deleted_at is not null then
    if tg_op = 'UPDATE' and old.deleted_at is null then
      perform kiln_private.audit(new.scope_id, 'workflow.deleted', 'workflow', new.id::text,
        jsonb_build_object('name', new.name, 'version', new.version));
    end if;
  elsif tg_op = 'INSERT' or old.version is distinct from new.version then
    perform kiln_private.audit(new.scope_id, 'workflow.saved', 'workflow', new.id::text,
      jsonb_build_object('name', new.name, 'version', new.version));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_workflows__audit() is 'Trigger: workflow.saved (create or replace: a new version) and workflow.deleted in the audit log.';
drop trigger if exists tg_workflows__audit on kiln_private.workflows;
create trigger tg_workflows__audit after insert or update of version, deleted_at
  on kiln_private.workflows for each row execute function kiln_private.tg_workflows__audit();

create or replace function kiln_private.tg_accounts__audit()
 returns trigger
 language plpgsql
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_changes jsonb := '{}';
begin
  if tg_op = 'INSERT' then
    perform kiln_private.audit(new.id, 'account.created', 'account', new.id::text,
      jsonb_build_object('email', new.email, 'tier', new.tier, 'budgetMicros', new.budget_micros));
    return null;
  end if;
  if old.tier is distinct from new.tier then
    v_changes := v_changes || jsonb_build_object('tier', jsonb_build_object('from', old.tier, 'to', new.tier));
  end if;
  if old.budget_micros is distinct from new.budget_micros then
    v_changes := v_changes || jsonb_build_object('budgetMicros', jsonb_build_object('from', old.budget_micros, 'to', new.budget_micros));
  end if;
  if old.parallel_slots is distinct from new.parallel_slots then
    v_changes := v_changes || jsonb_build_object('parallelSlots', jsonb_build_object('from', old.parallel_slots, 'to', new.parallel_slots));
  end if;
  if old.is_admin is distinct from new.is_admin then
    v_changes := v_changes || jsonb_build_object('admin', jsonb_build_object('from', old.is_admin, 'to', new.is_admin));
  end if;
  if old.admin_by_group is distinct from new.admin_by_group then
    v_changes := v_changes || jsonb_build_object('adminByGroup', jsonb_build_object('from', old.admin_by_group, 'to', new.admin_by_group));
  end if;
  if old.email is distinct from new.email then
    v_changes := v_changes || jsonb_build_object('email', jsonb_build_object('from', old.email, 'to', new.email));
  end if;
  if v_changes <> '{}' then
    perform kiln_private.audit(new.id, 'account.updated', 'account', new.id::text, v_changes);
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_accounts__audit() is 'Trigger: account.created and account.updated (tier, budget, slots, admin, email: each change from → to) in the audit log.';
drop trigger if exists tg_accounts__audit on kiln_private.accounts;
create trigger tg_accounts__audit after insert or update of tier, budget_micros, parallel_slots, is_admin, admin_by_group, email
  on kiln_private.accounts for each row execute function kiln_private.tg_accounts__audit();

create or replace function kiln_private.tg_workspaces__audit()
 returns trigger
 language plpgsql
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
begin
  if tg_op = 'INSERT' then
    perform kiln_private.audit(new.id, 'workspace.created', 'workspace', new.id::text,
      jsonb_build_object('name', new.name, 'ownerId', new.owner_id));
  elsif (old.plan_status, old.plan_budget_micros, old.name) is distinct from (new.plan_status, new.plan_budget_micros, new.name) then
    perform kiln_private.audit(new.id, 'workspace.updated', 'workspace', new.id::text, jsonb_build_object(
      'name', new.name, 'planStatus', jsonb_build_object('from', old.plan_status, 'to', new.plan_status),
      'budgetMicros', jsonb_build_object('from', old.plan_budget_micros, 'to', new.plan_budget_micros)));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_workspaces__audit() is 'Trigger: workspace.created and workspace.updated (plan status, budget, name) in the audit log.';
drop trigger if exists tg_workspaces__audit on kiln_private.workspaces;
create trigger tg_workspaces__audit after insert or update of plan_status, plan_budget_micros, name
  on kiln_private.workspaces for each row execute function kiln_private.tg_workspaces__audit();

create or replace function kiln_private.tg_workspace_members__audit()
 returns trigger
 language plpgsql
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
begin
  if tg_op = 'INSERT' or (old.left_at is not null and new.left_at is null) then
    perform kiln_private.audit(new.workspace_id, 'workspace.member_added', 'account', new.account_id::text,
      jsonb_build_object('role', new.role));
  elsif old.left_at is null and new.left_at is not null then
    perform kiln_private.audit(new.workspace_id, 'workspace.member_removed', 'account', new.account_id::text,
      jsonb_build_object('role', old.role));
  elsif old.role is distinct from new.role then
    perform kiln_private.audit(new.workspace_id, 'workspace.member_updated', 'account', new.account_id::text,
      jsonb_build_object('role', jsonb_build_object('from', old.role, 'to', new.role)));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_workspace_members__audit() is 'Trigger: workspace.member_added / member_removed / member_updated (role) in the audit log, in the workspace''s scope.';
drop trigger if exists tg_workspace_members__audit on kiln_private.workspace_members;
create trigger tg_workspace_members__audit after insert or update of role, left_at
  on kiln_private.workspace_members for each row execute function kiln_private.tg_workspace_members__audit();

create or replace function kiln_private.tg_models__audit()
 returns trigger
 language plpgsql
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_old jsonb;
  v_new jsonb;
  v_changed jsonb;
begin
  if tg_op = 'INSERT' then
    perform kiln_private.audit(null, 'model.created', 'model', new.id, jsonb_build_object('enabled', new.enabled, 'provider', new.provider));
    return null;
  elsif tg_op = 'DELETE' then
    perform kiln_private.audit(null, 'model.deleted', 'model', old.id, '{}');
    return null;
  end if;
  v_old := to_jsonb(old) - 'updated_at' - 'created_at';
  v_new := to_jsonb(new) - 'updated_at' - 'created_at';
  if v_old = v_new then
    return null;  -- a catalog import that changed nothing
  end if;
  select coalesce(jsonb_object_agg(n.key, jsonb_build_object('from', v_old->n.key, 'to', n.value)), '{}')
    into v_changed from jsonb_each(v_new) n where v_old->n.key is distinct from n.value;
  perform kiln_private.audit(null,
    case when old.enabled and not new.enabled then 'model.disabled' when new.enabled and not old.enabled then 'model.enabled' else 'model.updated' end,
    'model', new.id, v_changed);
  return null;
end;
$function$;
comment on function kiln_private.tg_models__audit() is 'Trigger: model.created / updated / enabled / disabled / deleted in the audit log (service-wide, scope null), with each changed field from → to; a write that changes nothing is not recorded.';
drop trigger if exists tg_models__audit on kiln_private.models;
create trigger tg_models__audit after insert or update or delete
  on kiln_private.models for each row execute function kiln_private.tg_models__audit();

-- 3. Keys people manage themselves, and console sessions -----------------------------------------

create or replace function kiln_private.key_json(k kiln_private.api_keys, p_used bigint)
 returns json
 language sql
 stable
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  select json_build_object(
    'id', k.id, 'name', k.name, 'prefix', k.display_prefix, 'scopes', k.scopes, 'rpm', k.rpm,
    'workspaceId', k.workspace_id, 'budgetMicros', k.budget_micros, 'usedMicros', coalesce(p_used, 0),
    'createdAt', to_char(k.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'lastUsedAt', to_char(k.last_used_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'expiresAt', to_char(k.expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'revokedAt', to_char(k.revoked_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'));
$function$;
comment on function kiln_private.key_json(kiln_private.api_keys,bigint) is 'A key as GET /keys lists it (never its hash).';

create or replace function kiln_private.key_used(k kiln_private.api_keys)
 returns bigint
 language sql
 stable
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  -- A key with its own budget: its running total. Any other: what its charges of the scope's
  -- current period hold or settled (the day roll-ups plus the open reservations).
  select case when k.budget_micros is not null then
    (select coalesce(b.held_micros + b.settled_micros, 0) from kiln_private.key_budget_periods b
     where b.key_id = k.id and b.period_start = kiln_private.key_period(k.account_id, k.workspace_id))
  else
    (select coalesce(sum(d.spend_micros), 0) from kiln_private.charge_days d
     where d.pool_id = coalesce(k.workspace_id, k.account_id) and d.key_id = k.id
       and d.period_start = kiln_private.key_period(k.account_id, k.workspace_id))
    + (select coalesce(sum(c.reserved_micros), 0) from kiln_private.charges c
       where c.key_id = k.id and c.status = 'reserved'
         and c.period_start = kiln_private.key_period(k.account_id, k.workspace_id))
  end;
$function$;
comment on function kiln_private.key_used(kiln_private.api_keys) is 'What a key spent this period of its scope (settled plus held), for GET /keys.';

create or replace function kiln_private.visible_key(p_account_id uuid, p_workspace_id uuid, p_key_id uuid)
 returns kiln_private.api_keys
 language sql
 stable
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  -- Personal scope: the caller's own personal keys. A workspace: its keys; all of them for an
  -- owner or admin, a member's own otherwise. Sessions are never keys.
  select k.* from kiln_private.api_keys k
  where k.id = p_key_id and k.kind = 'key'
    and case when p_workspace_id is null then k.account_id = p_account_id and k.workspace_id is null
             else k.workspace_id = p_workspace_id and (k.account_id = p_account_id or exists (
               select 1 from kiln_private.workspace_members m
               where m.workspace_id = p_workspace_id and m.account_id = p_account_id and m.left_at is null
                 and m.role in ('owner', 'admin'))) end;
$function$;
comment on function kiln_private.visible_key(uuid,uuid,uuid) is 'The key with this id when the caller''s billing scope may manage it (else no row: a 404, never a hint).';

create or replace function kiln.list_keys(p_account_id uuid, p_workspace_id uuid)
 returns json
 language sql
 stable
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  select json_build_object('data', coalesce(json_agg(kiln_private.key_json(k, kiln_private.key_used(k)) order by k.created_at desc, k.id), '[]'))
  from kiln_private.api_keys k
  where k.kind = 'key'
    and case when p_workspace_id is null then k.account_id = p_account_id and k.workspace_id is null
             else k.workspace_id = p_workspace_id and (k.account_id = p_account_id or exists (
               select 1 from kiln_private.workspace_members m
               where m.workspace_id = p_workspace_id and m.account_id = p_account_id and m.left_at is null
                 and m.role in ('owner', 'admin'))) end;
$function$;
comment on function kiln.list_keys(uuid,uuid) is 'GET /keys: the keys of the caller''s billing scope (kiln_private.visible_key''s rule), newest first, revoked ones included.';

create or replace function kiln.create_key(p_account_id uuid, p_workspace_id uuid, p_caller_scopes text[], p_key_hash bytea, p_display_prefix text,
                                           p_name text, p_scopes text[], p_rpm integer, p_budget_micros bigint, p_expires_at timestamptz)
 returns json
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
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
  insert into kiln_private.api_keys (account_id, key_hash, display_prefix, scopes, rpm, workspace_id, name, budget_micros, expires_at)
    values (p_account_id, p_key_hash, p_display_prefix, p_scopes, p_rpm, p_workspace_id, p_name, p_budget_micros, p_expires_at)
    returning * into v_key;
  return kiln_private.key_json(v_key, 0);
exception
  when check_violation then
    raise exception 'invalid key settings (scopes: one or more of read, write, keys, admin; rpm and budgetMicros positive; name up to 200 characters)' using errcode = 'KI001';
end;
$function$;
comment on function kiln.create_key(uuid,uuid,text[],bytea,text,text,text[],integer,bigint,timestamp with time zone) is 'POST /keys: a new key in the caller''s billing scope, its scopes within the caller''s (KF001), with an optional rpm, own budget per period and expiry. Returns its list entry.';

create or replace function kiln.rotate_key(p_account_id uuid, p_workspace_id uuid, p_key_id uuid, p_key_hash bytea, p_display_prefix text, p_grace_seconds integer)
 returns json
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_key kiln_private.api_keys;
begin
  if p_grace_seconds is null or p_grace_seconds < 0 or p_grace_seconds > 604800 then
    raise exception 'graceSeconds must be between 0 and 604800 (7 days)' using errcode = 'KI001';
  end if;
  select * into v_key from kiln_private.visible_key(p_account_id, p_workspace_id, p_key_id);
  if v_key.id is null then
    raise exception 'key not found' using errcode = 'KN001';
  end if;
  select * into v_key from kiln_private.api_keys where id = v_key.id for update;
  if v_key.revoked_at is not null then
    raise exception 'the key is revoked; create a new key' using errcode = 'KT001';
  end if;
  if v_key.expires_at is not null and v_key.expires_at <= now() then
    raise exception 'the key has expired; create a new key' using errcode = 'KT001';
  end if;
  if p_grace_seconds > 0 then
    insert into kiln_private.api_key_grace (key_hash, key_id, display_prefix, expires_at)
      values (v_key.key_hash, v_key.id, v_key.display_prefix, now() + make_interval(secs => p_grace_seconds));
  end if;
  update kiln_private.api_keys set key_hash = p_key_hash, display_prefix = p_display_prefix, rotated_at = now()
    where id = v_key.id returning * into v_key;
  return kiln_private.key_json(v_key, kiln_private.key_used(v_key));
end;
$function$;
comment on function kiln.rotate_key(uuid,uuid,uuid,bytea,text,integer) is 'POST /keys/{id}/rotate: a new secret under the same id; the previous one stays valid for p_grace_seconds (0 to 7 days), then gets the same 401 as any unknown key. KN001 not the caller''s, KT001 revoked or expired.';

create or replace function kiln.revoke_key(p_account_id uuid, p_workspace_id uuid, p_key_id uuid)
 returns json
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_key kiln_private.api_keys;
begin
  select * into v_key from kiln_private.visible_key(p_account_id, p_workspace_id, p_key_id);
  if v_key.id is null then
    raise exception 'key not found' using errcode = 'KN001';
  end if;
  update kiln_private.api_keys set revoked_at = coalesce(revoked_at, now()) where id = v_key.id returning * into v_key;
  delete from kiln_private.api_key_grace where key_id = v_key.id;
  return kiln_private.key_json(v_key, kiln_private.key_used(v_key));
end;
$function$;
comment on function kiln.revoke_key(uuid,uuid,uuid) is 'DELETE /keys/{id}: revokes every secret of the key at once (the next request with any of them gets 401). Idempotent.';

create or replace function kiln.record_key_expiries()
 returns integer
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_key record;
  v_n int := 0;
begin
  for v_key in
    update kiln_private.api_keys set expiry_recorded = true
    where id in (select id from kiln_private.api_keys
                 where expires_at <= now() and not expiry_recorded and kind = 'key'
                 order by expires_at limit 1000 for update skip locked)
    returning id, account_id, workspace_id, display_prefix, expires_at, revoked_at
  loop
    if v_key.revoked_at is null or v_key.revoked_at > v_key.expires_at then
      perform kiln_private.audit(coalesce(v_key.workspace_id, v_key.account_id), 'key.expired', 'key', v_key.id::text,
        jsonb_build_object('prefix', v_key.display_prefix, 'expiresAt', v_key.expires_at));
      v_n := v_n + 1;
    end if;
  end loop;
  return v_n;
end;
$function$;
comment on function kiln.record_key_expiries() is 'Housekeeping: one key.expired audit entry per key whose expiry has passed (once each; up to 1,000 a call). Expiry itself needs no sweep: an expired key already gets 401.';

-- Sessions: a console sign-in is a credential of kind session under the user's account. Its
-- cookie's hash is key_hash; it has read, write and keys (and admin for admins), lasts at most
-- p_lifetime_seconds and ends after p_idle_seconds unused.
create or replace function kiln.create_session(p_account_id uuid, p_key_hash bytea, p_display_prefix text, p_idle_seconds integer, p_lifetime_seconds integer, p_name text)
 returns uuid
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_id uuid;
begin
  insert into kiln_private.api_keys (account_id, key_hash, display_prefix, scopes, kind, name, idle_seconds, expires_at, last_used_at)
    values (p_account_id, p_key_hash, p_display_prefix, array['read', 'write', 'keys', 'admin'], 'session', left(p_name, 200),
            p_idle_seconds, now() + make_interval(secs => p_lifetime_seconds), now())
    returning id into v_id;
  return v_id;
end;
$function$;
comment on function kiln.create_session(uuid,bytea,text,integer,integer,text) is 'A console session after a sign-in (audited as session.created). Its admin scope counts only while the user is an admin.';

create or replace function kiln.end_session(p_key_hash bytea)
 returns boolean
 language sql
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  with ended as (
    update kiln_private.api_keys set revoked_at = now()
    where key_hash = p_key_hash and kind = 'session' and revoked_at is null
    returning id)
  select exists (select 1 from ended);
$function$;
comment on function kiln.end_session(bytea) is 'Sign-out: ends the session with this cookie hash (audited as session.deleted). False when there was none.';

create or replace function kiln.session_info(p_key_hash bytea)
 returns json
 language sql
 stable
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  select json_build_object(
    'user', json_build_object('id', a.id, 'email', a.email, 'admin', a.is_admin or a.admin_by_group),
    'workspaceId', k.workspace_id,
    'workspaces', coalesce((select json_agg(json_build_object('id', w.id, 'name', w.name, 'role', m.role) order by w.name, w.id)
                            from kiln_private.workspace_members m join kiln_private.workspaces w on w.id = m.workspace_id
                            where m.account_id = a.id and m.left_at is null), '[]'),
    'expiresAt', to_char(least(k.expires_at, coalesce(k.last_used_at, k.created_at) + make_interval(secs => k.idle_seconds)) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
  from kiln_private.credentials(array[p_key_hash]) c
  join kiln_private.api_keys k on k.id = c.id and k.kind = 'session'
  join kiln_private.accounts a on a.id = k.account_id;
$function$;
comment on function kiln.session_info(bytea) is 'Who a live console session is: the user, the workspace it acts in (null = personal), the workspaces it may switch to, and when it ends. No row when the session is not live.';

create or replace function kiln.switch_session_workspace(p_key_hash bytea, p_workspace_id uuid)
 returns boolean
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_id uuid;
  v_account uuid;
begin
  select c.id, c.account_id into v_id, v_account from kiln_private.credentials(array[p_key_hash]) c
    join kiln_private.api_keys k on k.id = c.id and k.kind = 'session';
  if v_id is null then
    return false;
  end if;
  if p_workspace_id is not null then
    perform 1 from kiln_private.workspace_members where workspace_id = p_workspace_id and account_id = v_account and left_at is null;
    if not found then
      raise exception 'workspace not found' using errcode = 'KN001';
    end if;
  end if;
  update kiln_private.api_keys set workspace_id = p_workspace_id where id = v_id;
  return true;
end;
$function$;
comment on function kiln.switch_session_workspace(bytea,uuid) is 'The console''s switcher: the session acts in one of its user''s workspaces (KN001 when not a current member), or personally (null).';

create or replace function kiln.sign_in(p_issuer text, p_subject text, p_email text, p_email_verified boolean, p_allowed_domains text[], p_admin_by_group boolean)
 returns table (account_id uuid, outcome text)
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
#variable_conflict use_column
declare
  v_account uuid;
  v_domain text := lower(split_part(coalesce(p_email, ''), '@', 2));
begin
  -- 1. An identity already linked (kiln identity link, the same links MCP uses).
  select i.account_id into v_account from kiln_private.identities i where i.issuer = p_issuer and i.subject = p_subject;
  if v_account is not null then
    update kiln_private.identities set last_seen_at = now() where issuer = p_issuer and subject = p_subject;
    if p_admin_by_group is not null then
      update kiln_private.accounts set admin_by_group = p_admin_by_group where id = v_account and admin_by_group <> p_admin_by_group;
    end if;
    return query select v_account, 'linked'::text;
    return;
  end if;
  -- 2. A verified email of an allowed domain: a new user on the default tier, linked.
  if coalesce(p_email_verified, false) and v_domain <> '' and v_domain = any (coalesce(p_allowed_domains, '{}'))
     and p_email ~ '^[^@\s]+@[^@\s]+$' and length(p_email) <= 320 then
    select a.id into v_account from kiln_private.accounts a where lower(a.email) = lower(p_email);
    if v_account is not null then
      -- An account with that email exists but is not linked to this identity: an operator links
      -- it (kiln identity link); taking it over by email alone is refused.
      perform kiln_private.audit(null, 'session.refused', 'identity', left(p_issuer || ' ' || p_subject, 400),
        jsonb_build_object('reason', 'email_in_use', 'emailDomain', v_domain));
      return query select null::uuid, 'email_in_use'::text;
      return;
    end if;
    select (kiln.create_account(p_email)).id into v_account;
    insert into kiln_private.identities (issuer, subject, account_id, email) values (p_issuer, p_subject, v_account, p_email);
    if p_admin_by_group then
      update kiln_private.accounts set admin_by_group = true where id = v_account;
    end if;
    return query select v_account, 'provisioned'::text;
    return;
  end if;
  -- 3. Anyone else: refused, nothing created.
  perform kiln_private.audit(null, 'session.refused', 'identity', left(p_issuer || ' ' || p_subject, 400),
    jsonb_build_object('reason', case when v_domain = '' then 'no_email' when not coalesce(p_email_verified, false) then 'email_not_verified'
                                      else 'domain_not_allowed' end, 'emailDomain', nullif(v_domain, '')));
  return query select null::uuid, 'refused'::text;
end;
$function$;
comment on function kiln.sign_in(text,text,text,boolean,text[],boolean) is 'Who an SSO sign-in is: a linked identity''s user (linked); else, for a verified email of an allowed domain, a new user on the default tier, linked (provisioned); else nobody (refused, or email_in_use when an unlinked account has that email), audited as session.refused. p_admin_by_group (null = no admin group configured) refreshes the user''s admin-by-group flag.';

create or replace function kiln.get_usage(p_account_id uuid, p_workspace_id uuid)
 returns json
 language sql
 stable security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  select usage from kiln_private.usage_rows(p_account_id, p_workspace_id, null);
$function$;
