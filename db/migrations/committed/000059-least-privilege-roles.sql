--! Previous: sha1:7431a48ff09d7e4c3d284f7b94a39431766411a9
--! Hash: sha1:623338cc94fbd718c0b8bc6f128bc8204f843a58
--! Message: Least privilege: the kiln_app role, no function executable by PUBLIC, the audit retention the owner sets

--! split: 1-current.sql
-- Enter migration here

--! split: 6-least-privilege.sql
-- Least privilege in the database (docs/security.md, "Database roles"):
-- - PUBLIC executes no function of Kiln's, in any schema Kiln creates (kiln, kiln_private, and the
--   queue's graphile_worker), now or later: default privileges of the role that migrates (the
--   owner) take EXECUTE away from PUBLIC for every function it makes from here on. A per-schema
--   `alter default privileges in schema … revoke … from public` (000046) cannot remove the global
--   default, so it did nothing.
-- - kiln_analyst executes nothing: the analyst views run with their owner's rights.
-- - kiln_app (db/roles.sql) holds what the service needs at run time and owns nothing.
-- - The audit log's retention is the owner's to set (kiln.set_audit_retention, called by `kiln migrate`
--   with KILN_AUDIT_RETENTION); the purge the service runs deletes only what is past it.

-- ------------------------------------------------------------------ the audit log's retention
create table if not exists kiln_private.audit_policy (
  only_row boolean primary key default true check (only_row),
  retention interval check (retention > interval '0'),
  set_at timestamptz not null default now()
);
comment on table kiln_private.audit_policy is 'The audit log''s retention, set by the owner (`kiln migrate` from KILN_AUDIT_RETENTION): null keeps every entry. One row at most. The service role cannot change it.';

drop function if exists kiln.purge_audit_log(timestamptz, integer);

create or replace function kiln.purge_audit_log(p_limit integer default 10000)
  returns integer
  language plpgsql
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_retention interval;
  v_n int;
begin
  if p_limit is null or p_limit < 1 then
    raise exception 'purge_audit_log needs a positive limit' using errcode = 'KI001';
  end if;
  select retention into v_retention from kiln_private.audit_policy;
  if v_retention is null then
    return 0; -- kept forever
  end if;
  perform set_config('kiln.audit_purge', 'on', true);
  delete from kiln_private.audit_log where id in (
    select id from kiln_private.audit_log where at < now() - v_retention order by at limit p_limit);
  get diagnostics v_n = row_count;
  perform set_config('kiln.audit_purge', 'off', true);
  return v_n;
end;
$$;
comment on function kiln.purge_audit_log(integer) is 'The retention purge (housekeeping): deletes up to p_limit entries older than the owner''s retention (kiln_private.audit_policy), oldest first, and nothing when none is set. The only delete the append-only trigger lets through; the caller cannot choose what is old.';

create or replace function kiln.set_audit_retention(p_retention interval)
  returns interval
  language plpgsql
  set search_path = pg_catalog, pg_temp
as $$
begin
  if p_retention is not null and p_retention <= interval '0' then
    raise exception 'the retention must be positive, or null to keep every entry' using errcode = 'KI001';
  end if;
  insert into kiln_private.audit_policy (only_row, retention, set_at) values (true, p_retention, now())
    on conflict (only_row) do update set retention = excluded.retention, set_at = excluded.set_at
    where kiln_private.audit_policy.retention is distinct from excluded.retention;
  return p_retention;
end;
$$;
comment on function kiln.set_audit_retention(interval) is 'The owner''s: sets how long the audit log keeps entries (null = forever). `kiln migrate` calls it with KILN_AUDIT_RETENTION. Invoker rights and no grant: only the owner (or a superuser) can run it.';

-- ------------------------------------------------------------------ PUBLIC: nothing
revoke execute on all functions in schema kiln from public;
revoke execute on all functions in schema kiln_private from public;
revoke execute on all functions in schema graphile_worker from public;
-- Every function the owner makes later, in any schema (the global default: FOR ROLE the owner).
alter default privileges revoke execute on functions from public;

-- ------------------------------------------------------------------ kiln_analyst: the views only
revoke execute on all functions in schema kiln from kiln_analyst;

-- ------------------------------------------------------------------ kiln_app: the service
-- The kiln functions are the service's interface; almost all are SECURITY DEFINER with a pinned
-- search_path, so kiln_app needs no rights on kiln_private's tables to call them.
grant usage on schema kiln to kiln_app;
grant execute on all functions in schema kiln to kiln_app;
revoke execute on function kiln.set_audit_retention(interval) from kiln_app;
-- The views the service reads itself (the catalog; GET /audit's entries for operators).
grant select on kiln.models, kiln.audit_log to kiln_app;
-- Functions the owner adds to kiln later are the service's too (set_audit_retention is revoked above:
-- a later owner-only function is revoked in its own migration, and test/db.privileges.test.ts checks).
alter default privileges in schema kiln grant execute on functions to kiln_app;

-- Invoker functions the service calls reach into kiln_private: exactly what they touch.
grant usage on schema kiln_private to kiln_app;
grant execute on function kiln_private.trim_upstream_minutes() to kiln_app;
grant select, insert, update on kiln_private.rate_limit_buckets to kiln_app; -- kiln.consume_rate_limits

-- The job queue (graphile-worker's schema): the service is its client (add, lock, complete, fail
-- jobs; LISTEN; its migration check reads graphile_worker.migrations).
grant usage on schema graphile_worker to kiln_app;
grant select, insert, update, delete on all tables in schema graphile_worker to kiln_app;
grant usage, select, update on all sequences in schema graphile_worker to kiln_app;
grant execute on all functions in schema graphile_worker to kiln_app;
alter default privileges in schema graphile_worker grant select, insert, update, delete on tables to kiln_app;
alter default privileges in schema graphile_worker grant usage, select, update on sequences to kiln_app;
alter default privileges in schema graphile_worker grant execute on functions to kiln_app;
-- graphile-worker turns row-level security on for its private tables (no policy: only their owner
-- sees rows). kiln_app is the queue's client, so it sees and changes every row.
do $$
declare
  t record;
begin
  for t in select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
           where n.nspname = 'graphile_worker' and c.relkind = 'r' and c.relrowsecurity loop
    if not exists (select 1 from pg_policies where schemaname = 'graphile_worker' and tablename = t.relname and policyname = 'kiln_app') then
      execute format('create policy kiln_app on graphile_worker.%I for all to kiln_app using (true) with check (true)', t.relname);
    end if;
  end loop;
end
$$;

-- graphile-migrate's record: /readyz and the start-up check compare it with the build's migrations.
grant usage on schema graphile_migrate to kiln_app;
grant select on all tables in schema graphile_migrate to kiln_app;
