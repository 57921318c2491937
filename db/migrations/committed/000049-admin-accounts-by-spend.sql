--! Previous: sha1:22f98186f49d1766b73881b6b1bdc9f794e2d297
--! Hash: sha1:3b69a2b88e3d175c8bdd7b15233eed23e4d59083
--! Message: The operator's view: per-account spend this period kept and indexed, accounts paged by spend with email search (pg_trgm), admin functions re-checking the admin

--! split: 1-current.sql
-- The operator's view (issue 29, part A): admins, the accounts page sorted by spend this period,
-- workspaces, the whole catalog and the service's health, under /api/v1/admin. Idempotent.

-- 1. Each account's spend this period, kept where an index can order it -------------------------
-- The accounts page sorts 100,000s of accounts by what they spent this period. Summing the ledger
-- (or even budget_periods) per account per page would cost the size of history; instead one row
-- per account carries its current period's held + settled, written by a trigger on
-- kiln_private.budget_periods in the transaction that changes the pool, and an index orders it.

create table if not exists kiln_private.account_spend (
  account_id uuid not null primary key references kiln_private.accounts (id) on delete cascade,
  period_start timestamptz not null,
  period_end timestamptz not null,
  used_micros bigint not null default 0 check (used_micros >= 0)
);
comment on table kiln_private.account_spend is 'Per account: held + settled of its latest budget period (kiln_private.budget_periods, pool = the account), kept by tg_budget_periods__account_spend; ordered by account_spend_used_idx for the admin accounts page. A row whose period_end has passed counts as 0 (the period rolled without a charge) until kiln.roll_account_spend zeroes it.';
create index if not exists account_spend_used_idx on kiln_private.account_spend (used_micros, account_id) include (period_end);
create index if not exists account_spend_roll_idx on kiln_private.account_spend (period_end) where used_micros > 0;

create or replace function kiln_private.period_end(p_anchor timestamptz, p_period_start timestamptz)
 returns timestamptz
 language sql
 immutable parallel safe
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  -- A period lasts 28 to 31 days, so 32 days after its start is inside the next one.
  select kiln_private.period_start(p_anchor, p_period_start + interval '32 days');
$function$;
comment on function kiln_private.period_end(timestamp with time zone,timestamp with time zone) is 'The end of the budget period that starts at p_period_start (anchored at p_anchor): the next period''s start.';

create or replace function kiln_private.tg_budget_periods__account_spend()
 returns trigger
 language plpgsql
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
begin
  -- The common case, on the reservation's hot path: the same period, one primary-key update.
  update kiln_private.account_spend s set used_micros = new.held_micros + new.settled_micros
    where s.account_id = new.pool_id and s.period_start = new.period_start;
  if found or tg_op = 'UPDATE' then
    -- (An update of a period the row no longer holds is a late settlement of an earlier period:
    -- a later period's figure stays.)
    return null;
  end if;
  -- A new period's first reservation. Pools that are workspaces have no row and update nothing.
  update kiln_private.account_spend s
    set used_micros = new.held_micros + new.settled_micros,
        period_start = new.period_start,
        period_end = kiln_private.period_end(a.period_anchor, new.period_start)
    from kiln_private.accounts a
    where s.account_id = new.pool_id and a.id = new.pool_id and s.period_start < new.period_start;
  return null;
end;
$function$;
comment on function kiln_private.tg_budget_periods__account_spend() is 'Trigger: an account pool''s held + settled for its latest period into kiln_private.account_spend, in the transaction of the reservation or settlement: one primary-key update; a new period''s first row (an insert) also moves the row''s period.';
drop trigger if exists tg_budget_periods__account_spend on kiln_private.budget_periods;
create trigger tg_budget_periods__account_spend after insert or update of held_micros, settled_micros
  on kiln_private.budget_periods for each row execute function kiln_private.tg_budget_periods__account_spend();

create or replace function kiln_private.tg_accounts__account_spend()
 returns trigger
 language plpgsql
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_start timestamptz := kiln_private.period_start(new.period_anchor, now());
begin
  -- A new account starts at 0; a moved anchor re-reads the period it now falls in.
  insert into kiln_private.account_spend (account_id, period_start, period_end, used_micros)
    values (new.id, v_start, kiln_private.period_end(new.period_anchor, v_start),
            coalesce((select b.held_micros + b.settled_micros from kiln_private.budget_periods b
                      where b.pool_id = new.id and b.period_start = v_start), 0))
    on conflict (account_id) do update
      set period_start = excluded.period_start, period_end = excluded.period_end, used_micros = excluded.used_micros;
  return null;
end;
$function$;
comment on function kiln_private.tg_accounts__account_spend() is 'Trigger: every account has its kiln_private.account_spend row from creation; a changed period anchor recomputes it.';
drop trigger if exists tg_accounts__account_spend on kiln_private.accounts;
create trigger tg_accounts__account_spend after insert or update of period_anchor
  on kiln_private.accounts for each row execute function kiln_private.tg_accounts__account_spend();

create or replace function kiln.roll_account_spend(p_limit integer default 1000)
 returns integer
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_n int;
begin
  -- Rows locked in id order and never waited for (a reservation holding one updates it anyway).
  update kiln_private.account_spend s
    set used_micros = 0,
        period_start = kiln_private.period_start(a.period_anchor, now()),
        period_end = kiln_private.period_end(a.period_anchor, kiln_private.period_start(a.period_anchor, now()))
    from kiln_private.accounts a
    where a.id = s.account_id
      and s.account_id in (select x.account_id from kiln_private.account_spend x
                           where x.used_micros > 0 and x.period_end <= now()
                           order by x.account_id limit p_limit for update skip locked);
  get diagnostics v_n = row_count;
  return v_n;
end;
$function$;
comment on function kiln.roll_account_spend(integer) is 'Housekeeping: zeroes up to p_limit kiln_private.account_spend rows whose period ended without a new charge (a partial-index range: free when there are none). Readers already count such rows as 0; this puts them back in index order.';

create or replace function kiln_private.rebuild_account_spend()
 returns bigint
 language plpgsql
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_n bigint;
begin
  insert into kiln_private.account_spend (account_id, period_start, period_end, used_micros)
    select a.id, p.s, kiln_private.period_end(a.period_anchor, p.s), coalesce(b.held_micros + b.settled_micros, 0)
    from kiln_private.accounts a
    cross join lateral (select kiln_private.period_start(a.period_anchor, now()) as s) p
    left join kiln_private.budget_periods b on b.pool_id = a.id and b.period_start = p.s
  on conflict (account_id) do update
    set period_start = excluded.period_start, period_end = excluded.period_end, used_micros = excluded.used_micros
    where (account_spend.period_start, account_spend.period_end, account_spend.used_micros)
          is distinct from (excluded.period_start, excluded.period_end, excluded.used_micros);
  get diagnostics v_n = row_count;
  return v_n;
end;
$function$;
comment on function kiln_private.rebuild_account_spend() is 'Every account''s kiln_private.account_spend row from its current period''s budget_periods row (the backfill; a restore or a bulk load runs it again). Returns the rows written.';

-- Backfill (and, run again, recompute) every account's row.
select kiln_private.rebuild_account_spend();

-- Substring search on email: trigrams (pg_trgm ships with Postgres' contrib: embedded-postgres,
-- the official images and Debian's postgresql-NN all have it; trusted since PG13).
create extension if not exists pg_trgm;
create index if not exists accounts_email_trgm_idx on kiln_private.accounts using gin (lower(email) gin_trgm_ops);

-- The health page counts pending deliveries without reading the delivery log.
create index if not exists webhook_deliveries_pending_idx on kiln_private.webhook_deliveries (next_attempt_at) where status = 'pending';

-- 2. Admins ----------------------------------------------------------------------------------

create or replace function kiln.set_account_admin(p_account_id uuid, p_admin boolean)
 returns kiln_private.accounts
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_row kiln_private.accounts;
begin
  if p_admin is null then
    raise exception 'admin must be true or false' using errcode = 'KI001';
  end if;
  update kiln_private.accounts set is_admin = p_admin where id = p_account_id returning * into v_row;
  if not found then
    raise exception 'account not found' using errcode = 'KN001';
  end if;
  return v_row;
end;
$function$;
comment on function kiln.set_account_admin(uuid,boolean) is 'kiln user set --admin: makes an account an admin (or not); audited as account.updated by the accounts trigger. KN001 for an unknown account.';

create or replace function kiln_private.require_admin(p_account_id uuid)
 returns void
 language plpgsql
 stable
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
begin
  -- The authorization path already refused a non-admin (the admin scope counts only for admins);
  -- a write checks again in its own transaction, so a revoked admin cannot race it.
  perform 1 from kiln_private.accounts a where a.id = p_account_id and (a.is_admin or a.admin_by_group);
  if not found then
    raise exception 'this route is for admins' using errcode = 'KF001';
  end if;
end;
$function$;
comment on function kiln_private.require_admin(uuid) is 'Raises KF001 unless the account is an admin (operator flag or SSO group).';

-- 3. Accounts ----------------------------------------------------------------------------------

create or replace function kiln_private.admin_account_json(a kiln_private.accounts, p_used bigint)
 returns json
 language sql
 stable
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  select json_build_object(
    'id', a.id, 'email', a.email, 'tier', a.tier, 'budgetMicros', a.budget_micros, 'usedMicros', coalesce(p_used, 0),
    'keyCount', (select count(*) from kiln_private.api_keys k
                 where k.account_id = a.id and k.kind = 'key' and k.revoked_at is null
                   and (k.expires_at is null or k.expires_at > now())),
    'admin', a.is_admin or a.admin_by_group);
$function$;
comment on function kiln_private.admin_account_json(kiln_private.accounts,bigint) is 'An account as the admin accounts page lists it: its live keys counted through api_keys_account_idx.';

create or replace function kiln.admin_list_accounts(p_limit integer, p_after_used bigint, p_after_id uuid, p_q text)
 returns json
 language plpgsql
 stable
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  -- The sort is (spend this period desc, id desc); a cursor is the last row's pair.
  -- Without a cursor, a pair above every row: each walk is then one index range, generic plan or not.
  v_after_used bigint := case when p_after_id is null then 9223372036854775807 else p_after_used end;
  v_after_id uuid := coalesce(p_after_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
  v_zero_after uuid := case when p_after_id is null or p_after_used > 0 then 'ffffffff-ffff-ffff-ffff-ffffffffffff' else p_after_id end;
  v_pattern text;
  v_ids uuid[] := '{}';
  v_used bigint[] := '{}';
  v_more uuid[];
  v_more_used bigint[];
  v_need int;
begin
  if p_limit is null or p_limit < 1 or p_limit > 200 then
    raise exception 'limit must be between 1 and 200' using errcode = 'KI001';
  end if;
  if p_q is not null then
    v_pattern := '%' || replace(replace(replace(lower(p_q), '\', '\\'), '%', '\%'), '_', '\_') || '%';
  end if;

  if v_pattern is not null and (select count(*) from (select 1 from kiln_private.accounts a
                                                       where lower(a.email) like v_pattern limit 5000) x) < 5000 then
    -- A narrow search (under 5,000 matches, found through the trigram index): rank the matches.
    select coalesce(array_agg(m.id order by m.used desc, m.id desc), '{}'), coalesce(array_agg(m.used order by m.used desc, m.id desc), '{}')
      into v_ids, v_used
      from (select x.id, x.used
            -- Each match's spend by primary key (offset 0: never a hash join over every account's row).
            from (select a.id, case when s.period_end > now() then s.used_micros else 0 end as used
                  from kiln_private.accounts a
                  cross join lateral (select y.used_micros, y.period_end from kiln_private.account_spend y
                                      where y.account_id = a.id offset 0) s
                  where lower(a.email) like v_pattern) x
            where (x.used, x.id) < (v_after_used, v_after_id)
            order by x.used desc, x.id desc
            limit p_limit + 1) m;
  else
    -- Everyone, or a wide search (matches are dense in any order): walk account_spend_used_idx
    -- backwards from the cursor, checking each row's email by primary key as it goes (offset 0
    -- keeps the check a per-row lookup, never a semi-join that first reads every match). First
    -- who spent this period…
    select coalesce(array_agg(p.account_id order by p.used_micros desc, p.account_id desc), '{}'),
           coalesce(array_agg(p.used_micros order by p.used_micros desc, p.account_id desc), '{}')
      into v_ids, v_used
      from (select s.account_id, s.used_micros from kiln_private.account_spend s
            where s.used_micros > 0 and s.period_end > now()
              and (s.used_micros, s.account_id) < (v_after_used, v_after_id)
              and (v_pattern is null or exists (select 1 from kiln_private.accounts a where a.id = s.account_id and lower(a.email) like v_pattern offset 0))
            order by s.used_micros desc, s.account_id desc
            limit p_limit + 1) p;
    v_need := p_limit + 1 - cardinality(v_ids);
    if v_need > 0 then
      -- …then who spent nothing (including periods that rolled without a charge), by id.
      select coalesce(array_agg(z.account_id order by z.account_id desc), '{}'), coalesce(array_agg(0::bigint), '{}')
        into v_more, v_more_used
        from (select u.account_id from (
                (select s.account_id from kiln_private.account_spend s
                 where s.used_micros = 0 and s.account_id < v_zero_after
                   and (v_pattern is null or exists (select 1 from kiln_private.accounts a where a.id = s.account_id and lower(a.email) like v_pattern offset 0))
                 order by s.used_micros desc, s.account_id desc limit v_need)
                union all
                (select s.account_id from kiln_private.account_spend s
                 where s.used_micros > 0 and s.period_end <= now() and s.account_id < v_zero_after
                   and (v_pattern is null or exists (select 1 from kiln_private.accounts a where a.id = s.account_id and lower(a.email) like v_pattern offset 0))
                 order by s.account_id desc limit v_need)) u
              order by u.account_id desc limit v_need) z;
      v_ids := v_ids || v_more;
      v_used := v_used || v_more_used;
    end if;
  end if;

  return json_build_object(
    -- One primary-key lookup per row (offset 0 keeps the planner from hashing the whole table).
    'data', coalesce((select json_agg(kiln_private.admin_account_json(a.a, v_used[o.i]) order by o.i)
                      from unnest(v_ids[1:p_limit]) with ordinality as o(id, i)
                      cross join lateral (select x as a from kiln_private.accounts x where x.id = o.id offset 0) a), '[]'),
    'nextCursor', case when cardinality(v_ids) > p_limit then v_used[p_limit] || '.' || v_ids[p_limit] end);
end;
$function$;
comment on function kiln.admin_list_accounts(integer,bigint,uuid,text) is 'GET /admin/accounts: a page of accounts sorted by spend this period (held + settled, desc; then id desc), after the cursor (the previous page''s last spend and id), optionally those whose email contains p_q. Reads kiln_private.account_spend through its index, so a page costs what it returns: a search with under 5,000 matches ranks them alone (trigram index), a wider one filters the ordered walk.';

create or replace function kiln.admin_get_account(p_account_id uuid)
 returns json
 language sql
 stable
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  select (kiln_private.admin_account_json(a, coalesce(b.held_micros + b.settled_micros, 0))::jsonb || jsonb_build_object(
    'periodStart', to_char(p.s at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'resetsAt', to_char(kiln_private.period_end(a.period_anchor, p.s) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'createdAt', to_char(a.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'keys', coalesce((select jsonb_agg(kiln_private.key_json(k, kiln_private.key_used(k))::jsonb order by k.created_at desc, k.id)
                      from kiln_private.api_keys k where k.account_id = a.id and k.kind = 'key'), '[]'),
    'workspaces', coalesce((select jsonb_agg(jsonb_build_object('id', w.id, 'name', w.name, 'role', m.role) order by w.name, w.id)
                            from kiln_private.workspace_members m join kiln_private.workspaces w on w.id = m.workspace_id
                            where m.account_id = a.id and m.left_at is null), '[]')))::json
  from kiln_private.accounts a
  cross join lateral (select kiln_private.period_start(a.period_anchor, now()) as s) p
  left join kiln_private.budget_periods b on b.pool_id = a.id and b.period_start = p.s
  where a.id = p_account_id;
$function$;
comment on function kiln.admin_get_account(uuid) is 'GET /admin/accounts/{id}: the account page: tier, budget, spend this period and when it resets, its keys (never a hash) and workspaces. No row for an unknown account.';

create or replace function kiln.admin_update_account(p_admin_id uuid, p_account_id uuid, p_tier text, p_budget_micros bigint, p_set_budget boolean)
 returns json
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
begin
  perform kiln_private.require_admin(p_admin_id);
  perform kiln.update_account(p_account_id, p_tier, p_budget_micros, p_set_budget);
  return kiln.admin_get_account(p_account_id);
end;
$function$;
comment on function kiln.admin_update_account(uuid,uuid,text,bigint,boolean) is 'PATCH /admin/accounts/{id}: kiln.update_account by an admin (KF001 otherwise), audited as account.updated by the accounts trigger; returns the account page.';

create or replace function kiln.admin_revoke_account_keys(p_admin_id uuid, p_account_id uuid)
 returns json
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_ids uuid[];
begin
  perform kiln_private.require_admin(p_admin_id);
  perform 1 from kiln_private.accounts where id = p_account_id;
  if not found then
    raise exception 'account not found' using errcode = 'KN001';
  end if;
  -- One update: the api_keys trigger writes one key.revoked entry per key.
  with revoked as (
    update kiln_private.api_keys set revoked_at = now()
    where account_id = p_account_id and kind = 'key' and revoked_at is null
    returning id)
  select coalesce(array_agg(id), '{}') into v_ids from revoked;
  delete from kiln_private.api_key_grace where key_id = any (v_ids);
  return json_build_object('revoked', cardinality(v_ids), 'account', kiln.admin_get_account(p_account_id));
end;
$function$;
comment on function kiln.admin_revoke_account_keys(uuid,uuid) is 'POST /admin/accounts/{id}/revoke-keys: revokes every live API key of the account (every secret, rotation grace included; one key.revoked audit entry each). Sessions are not keys and stay. KF001 unless an admin, KN001 unknown account.';

-- 4. Workspaces ----------------------------------------------------------------------------------

create or replace function kiln_private.admin_workspace_json(w kiln_private.workspaces)
 returns jsonb
 language sql
 stable
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  select jsonb_build_object(
    'id', w.id, 'name', w.name, 'ownerId', w.owner_id,
    'ownerEmail', (select a.email from kiln_private.accounts a where a.id = w.owner_id),
    'planStatus', w.plan_status, 'budgetMicros', w.plan_budget_micros,
    'usedMicros', coalesce((select b.held_micros + b.settled_micros from kiln_private.budget_periods b
                            where b.pool_id = w.id and b.period_start = kiln_private.period_start(w.plan_period_anchor, now())), 0),
    'memberCount', (select count(*) from kiln_private.workspace_members m where m.workspace_id = w.id and m.left_at is null),
    'createdAt', to_char(w.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'));
$function$;
comment on function kiln_private.admin_workspace_json(kiln_private.workspaces) is 'A workspace as the admin pages list it: owner, Team plan, spend this period, current members counted.';

create or replace function kiln.admin_list_workspaces(p_limit integer, p_after uuid, p_q text)
 returns json
 language sql
 stable
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  with page as (
    select w from kiln_private.workspaces w
    where (p_after is null or w.id < p_after)
      and (p_q is null or strpos(lower(w.name), lower(p_q)) > 0)
    order by w.id desc
    limit p_limit + 1)
  select json_build_object(
    'data', coalesce((select json_agg(kiln_private.admin_workspace_json(p.w) order by (p.w).id desc)
                      from (select * from page order by (w).id desc limit p_limit) p), '[]'),
    'nextCursor', case when (select count(*) from page) > p_limit
                       then (select (w).id from page order by (w).id desc offset p_limit - 1 limit 1) end);
$function$;
comment on function kiln.admin_list_workspaces(integer,uuid,text) is 'GET /admin/workspaces: a page of workspaces by id (newest first for uuid v7 ids; any stable order otherwise), optionally whose name contains p_q.';

create or replace function kiln.admin_get_workspace(p_workspace_id uuid)
 returns json
 language sql
 stable
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  select (kiln_private.admin_workspace_json(w) || jsonb_build_object(
    'members', coalesce((select jsonb_agg(jsonb_build_object(
                           'accountId', m.account_id, 'email', a.email, 'role', m.role,
                           'joinedAt', to_char(m.joined_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                           'leftAt', to_char(m.left_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
                         order by m.left_at is not null, m.role = 'member', a.email)
                         from kiln_private.workspace_members m join kiln_private.accounts a on a.id = m.account_id
                         where m.workspace_id = w.id), '[]')))::json
  from kiln_private.workspaces w where w.id = p_workspace_id;
$function$;
comment on function kiln.admin_get_workspace(uuid) is 'GET /admin/workspaces/{id}: the workspace and its members (former ones too, with leftAt). No row for an unknown workspace.';

-- 5. The catalog ----------------------------------------------------------------------------------

create or replace function kiln.admin_set_model_enabled(p_admin_id uuid, p_model_id text, p_enabled boolean)
 returns kiln_private.models
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
declare
  v_model kiln_private.models;
begin
  perform kiln_private.require_admin(p_admin_id);
  if p_enabled is null then
    raise exception 'enabled must be true or false' using errcode = 'KI001';
  end if;
  -- updated_at is the entry's price version: a generation priced from a cached entry before the
  -- change is refused (KS001) and priced again; a disabled entry is refused at once (KI001).
  update kiln_private.models set enabled = p_enabled, updated_at = now()
    where id = p_model_id and enabled is distinct from p_enabled
    returning * into v_model;
  if not found then
    select * into v_model from kiln_private.models where id = p_model_id;
    if not found then
      raise exception 'model not found' using errcode = 'KN001';
    end if;
  end if;
  return v_model;
end;
$function$;
comment on function kiln.admin_set_model_enabled(uuid,text,boolean) is 'PATCH /admin/models/{id}: enables or disables a catalog entry (audited as model.enabled / model.disabled by the models trigger; no entry when unchanged). KF001 unless an admin, KN001 unknown entry.';

-- 6. Health ----------------------------------------------------------------------------------------

create or replace function kiln.admin_health()
 returns json
 language sql
 stable
 security definer
 set search_path to 'pg_catalog', 'pg_temp'
as $function$
  select json_build_object(
    'providers', coalesce((select json_agg(json_build_object(
                             'modelId', h.model_id, 'provider', h.provider, 'state', h.state,
                             'consecutiveFailures', h.consecutive_failures,
                             'skippedUntil', to_char(h.skipped_until at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                             'lastError', h.last_error,
                             'lastErrorAt', to_char(h.last_error_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                             'lastSuccessAt', to_char(h.last_success_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                             'calls15m', h.calls_15m, 'failures15m', h.failures_15m, 'errorRate15m', h.error_rate_15m)
                           order by h.model_id) from kiln.provider_health h), '[]'),
    'queue', (select json_build_object(
                'jobs', count(*),
                'ready', count(*) filter (where j.locked_at is null and j.run_at <= now() and j.attempts < j.max_attempts),
                'running', count(*) filter (where j.locked_at is not null),
                'scheduled', count(*) filter (where j.locked_at is null and j.run_at > now()),
                'oldestReadyAt', to_char(min(j.run_at) filter (where j.locked_at is null and j.run_at <= now() and j.attempts < j.max_attempts)
                                         at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                'oldestReadySeconds', floor(extract(epoch from now() - min(j.run_at) filter (
                                        where j.locked_at is null and j.run_at <= now() and j.attempts < j.max_attempts)))::bigint)
              from graphile_worker.jobs j),
    'webhooks', (select json_build_object(
                   'pending', count(*),
                   'due', count(*) filter (where d.next_attempt_at <= now()),
                   'oldestDueAt', to_char(min(d.next_attempt_at) filter (where d.next_attempt_at <= now()) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
                 from kiln_private.webhook_deliveries d where d.status = 'pending'));
$function$;
comment on function kiln.admin_health() is 'GET /admin/health: each network catalog entry''s upstream (kiln.provider_health), the job queue (graphile_worker.jobs, the public view: ready, running, scheduled, the oldest ready job) and the webhook backlog (pending deliveries, those due and the oldest due).';
