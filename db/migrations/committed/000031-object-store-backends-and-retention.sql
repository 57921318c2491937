--! Previous: sha1:699e0104cc551b034ed55924b5e1b7fbb99d29d8
--! Hash: sha1:26baa026547bd6c5af11589781d9cdb351926bfd
--! Message: Object store backends and retention

--! split: 1-current.sql
-- Issue 19: the image store gets a second backend (S3-compatible) and retention.
-- Metadata rows stay here; an object's bytes live in `data` (backend postgres) or under `location`
-- in the bucket (backend s3). Bytes are written before the row commits; every bucket key written
-- or given up is first noted in object_intents, so a crash in between leaves a note that the
-- sweep acts on (never a row without bytes). Retention deletes rows (leaving a tombstone so old
-- URLs answer 410) and marks the generations, run outputs and write-backs that named them.

alter table kiln_private.objects add column if not exists backend text not null default 'postgres';
alter table kiln_private.objects add column if not exists location text;
alter table kiln_private.objects add column if not exists sha256 bytea;
alter table kiln_private.objects alter column data drop not null;
alter table kiln_private.objects drop constraint if exists objects_backend_check;
alter table kiln_private.objects add constraint objects_backend_check check (
  (backend = 'postgres' and data is not null and location is null)
  or (backend = 's3' and data is null and location is not null and length(location) between 1 and 1024));
alter table kiln_private.objects drop constraint if exists objects_sha256_check;
alter table kiln_private.objects add constraint objects_sha256_check check (sha256 is null or length(sha256) = 32);
comment on column kiln_private.objects.backend is 'Where the bytes are: postgres (in data) or s3 (under location in the configured bucket). Switched object by object by kiln store migrate.';
comment on column kiln_private.objects.location is 'The bucket key holding the bytes (backend s3); unique per write, so a retried write never overwrites committed bytes.';
comment on column kiln_private.objects.sha256 is 'SHA-256 of the bytes (null for rows stored before issue 19); store migrate checks copies against it.';
create unique index if not exists objects_location_idx on kiln_private.objects (location) where location is not null;
-- Retention reads the oldest account-owned objects first.
create index if not exists objects_expiry_idx on kiln_private.objects (created_at) where owner_id is not null;
-- store migrate walks the objects still on the other backend.
create index if not exists objects_backend_idx on kiln_private.objects (backend, path);

create table if not exists kiln_private.object_intents (
  location text primary key check (length(location) between 1 and 1024),
  created_at timestamptz not null default now(),
  -- Set when a sweep took the key to delete its bytes: from then on no row may reference it.
  claimed_at timestamptz
);
comment on table kiln_private.object_intents is 'Bucket keys that may hold bytes no object row references: noted before a write and when a row gives a key up; the sweep deletes those still unreferenced after a grace period. A row may only reference a key whose note is unclaimed, so a write slower than the grace fails instead of leaving a row without bytes.';
create index if not exists object_intents_created_idx on kiln_private.object_intents (created_at);

create table if not exists kiln_private.expired_objects (
  path text primary key,
  owner_id uuid references kiln_private.accounts (id),
  visibility text not null check (visibility in ('private', 'public')),
  expired_at timestamptz not null default now()
);
comment on table kiln_private.expired_objects is 'Paths removed by retention, so their old URLs answer 410 gone instead of 404.';

-- ---------------------------------------------------------------- writing

create or replace function kiln_private.take_object_intent(p_location text)
returns void
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
begin
  -- Locks the note against a concurrent sweep: whichever commits first wins.
  delete from kiln_private.object_intents where location = p_location and claimed_at is null;
  if not found then
    raise exception 'the written bytes are no longer there (swept); write them again' using errcode = 'KS002';
  end if;
end;
$$;
comment on function kiln_private.take_object_intent(text) is 'A row is about to reference bucket key p_location: drops its note, or raises KS002 when there is no unclaimed note (a sweep took the bytes, or they were never noted).';

create or replace function kiln.note_object_intent(p_location text)
returns void
language sql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
  insert into kiln_private.object_intents (location) values (p_location)
  on conflict (location) do update set created_at = now(), claimed_at = null;
$$;
comment on function kiln.note_object_intent(text) is 'Notes a bucket key about to be written, committed before the write: if no object row ever references it, the sweep deletes it after the grace period.';

create or replace function kiln.record_object(
  p_path text, p_owner_id uuid, p_data bytea, p_location text, p_sha256 bytea, p_byte_size integer,
  p_content_type text, p_format text, p_width integer, p_height integer, p_visibility text)
returns kiln.object_meta
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_row kiln_private.objects;
begin
  insert into kiln_private.objects (path, owner_id, data, backend, location, sha256, content_type, format, width, height, byte_size, visibility)
    values (p_path, p_owner_id, p_data, case when p_location is null then 'postgres' else 's3' end, p_location, p_sha256,
            p_content_type, p_format, p_width, p_height, coalesce(length(p_data), p_byte_size), p_visibility)
    returning * into v_row;
  if p_location is not null then
    perform kiln_private.take_object_intent(p_location);
  end if;
  return row(v_row.path, v_row.owner_id, v_row.content_type, v_row.format, v_row.width, v_row.height,
             v_row.byte_size, v_row.visibility, v_row.created_at)::kiln.object_meta;
exception
  when unique_violation then
    raise exception 'an object already exists at that path' using errcode = 'KC001';
  when check_violation or not_null_violation or foreign_key_violation then
    raise exception 'invalid object' using errcode = 'KI001';
end;
$$;
comment on function kiln.record_object(text,uuid,bytea,text,bytea,integer,text,text,integer,integer,text) is 'Stores an image''s row (never overwrites): bytes in p_data (postgres backend) or already written under p_location (s3; its intent note is cleared). Raises KC001 when the path is taken, KI001 for a bad path or metadata.';

create or replace function kiln.record_seed_object(
  p_path text, p_data bytea, p_location text, p_sha256 bytea, p_byte_size integer,
  p_content_type text, p_format text, p_width integer, p_height integer)
returns boolean
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_old kiln_private.objects;
begin
  select * into v_old from kiln_private.objects where path = p_path for update;
  if found and v_old.byte_size = p_byte_size
     and coalesce(v_old.sha256, sha256(v_old.data)) is not distinct from p_sha256 then
    -- Unchanged: a copy written under p_location stays noted, so the sweep removes it.
    return false;
  end if;
  if found and v_old.location is not null then
    insert into kiln_private.object_intents (location) values (v_old.location) on conflict do nothing;
  end if;
  insert into kiln_private.objects (path, owner_id, data, backend, location, sha256, content_type, format, width, height, byte_size, visibility)
  values (p_path, null, p_data, case when p_location is null then 'postgres' else 's3' end, p_location, p_sha256,
          p_content_type, p_format, p_width, p_height, p_byte_size, 'public')
  on conflict (path) do update set
    data = excluded.data, backend = excluded.backend, location = excluded.location, sha256 = excluded.sha256,
    content_type = excluded.content_type, format = excluded.format,
    width = excluded.width, height = excluded.height, byte_size = excluded.byte_size;
  if p_location is not null then
    perform kiln_private.take_object_intent(p_location);
  end if;
  return true;
end;
$$;
comment on function kiln.record_seed_object(text,bytea,text,bytea,integer,text,text,integer,integer) is 'Stores or refreshes a shared image under seed/ (ownerless, public) on either backend; false when the stored bytes are already these (compared by size and SHA-256). A replaced bucket key is noted for the sweep.';

-- ---------------------------------------------------------------- reading

create or replace function kiln.find_object(p_path text)
returns table (path text, owner_id uuid, content_type text, format text, width integer, height integer, byte_size integer,
               visibility text, created_at timestamptz, backend text, location text, sha256 bytea, data bytea, expired_at timestamptz)
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
  select o.path, o.owner_id, o.content_type, o.format, o.width, o.height, o.byte_size, o.visibility, o.created_at,
         o.backend, o.location, o.sha256, o.data, null::timestamptz
  from kiln_private.objects o where o.path = p_path
  union all
  select e.path, e.owner_id, null, null, null, null, null, e.visibility, null, null, null, null, null, e.expired_at
  from kiln_private.expired_objects e
  where e.path = p_path and not exists (select 1 from kiln_private.objects o where o.path = p_path);
$$;
comment on function kiln.find_object(text) is 'One object with its backend, location and (postgres backend) bytes; or, for a path retention removed, a row with only expired_at set; no row when it never existed. Ownership is the caller''s check.';

-- ---------------------------------------------------------------- the sweep

create or replace function kiln.claim_orphan_objects(p_grace_seconds integer, p_limit integer)
returns setof text
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  -- Notes whose key a row references are settled: drop them.
  delete from kiln_private.object_intents i
  where i.created_at < now() - make_interval(secs => p_grace_seconds)
    and exists (select 1 from kiln_private.objects o where o.location = i.location);
  -- A claim commits before any byte is deleted; one left by a sweep that died is taken again
  -- after another grace period.
  return query
    update kiln_private.object_intents i set claimed_at = now()
    where i.location in (
      select c.location from kiln_private.object_intents c
      where c.created_at < now() - make_interval(secs => p_grace_seconds)
        and (c.claimed_at is null or c.claimed_at < now() - make_interval(secs => p_grace_seconds))
      order by c.created_at
      limit p_limit
      for update skip locked)
    returning i.location;
end;
$$;
comment on function kiln.claim_orphan_objects(integer,integer) is 'Claims up to p_limit bucket keys noted more than p_grace_seconds ago that no object row references (a claimed key can no longer be referenced, see kiln_private.take_object_intent): the sweep deletes their bytes, then calls kiln.forget_object_intents. The grace outlasts any presigned URL.';

create or replace function kiln.forget_object_intents(p_locations text[])
returns integer
language sql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
  with gone as (
    delete from kiln_private.object_intents i
    where i.location = any (p_locations)
    returning 1)
  select count(*)::int from gone;
$$;
comment on function kiln.forget_object_intents(text[]) is 'Drops the notes of bucket keys whose bytes were deleted (claimed by the sweep, or given up by retention: no row can reference either).';

create or replace function kiln_private.object_generation_id(p_path text)
returns uuid
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$
  -- Output paths end in the generation id: <account>/generations/<id>.<ext>, <account>/workflows/<run>/<id>.<ext>.
  select (regexp_match(p_path, '/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.[a-z]+$'))[1]::uuid;
$$;
comment on function kiln_private.object_generation_id(text) is 'The generation id an output path ends in (null for other paths).';

drop function if exists kiln.expire_objects(timestamptz, integer);
create or replace function kiln.expire_objects(p_max_age_seconds bigint, p_limit integer)
returns table (path text, location text)
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_at text := to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
  v_paths text[];
  v_locations text[];
  v_owners uuid[];
  v_visibilities text[];
begin
  with victims as (
    select o.path from kiln_private.objects o
    where o.owner_id is not null and o.created_at < now() - p_max_age_seconds * interval '1 second'
    order by o.created_at
    limit p_limit
    for update skip locked
  ), gone as (
    delete from kiln_private.objects o using victims v where o.path = v.path
    returning o.path, o.location, o.owner_id, o.visibility
  )
  select coalesce(array_agg(g.path), '{}'), coalesce(array_agg(g.location), '{}'), coalesce(array_agg(g.owner_id), '{}'),
         coalesce(array_agg(g.visibility), '{}')
    into v_paths, v_locations, v_owners, v_visibilities from gone g;
  if cardinality(v_paths) = 0 then
    return;
  end if;

  insert into kiln_private.expired_objects (path, owner_id, visibility)
    select p, o, v from unnest(v_paths, v_owners, v_visibilities) as u(p, o, v)
    on conflict do nothing;
  -- The bucket keys are deleted by the caller after this commits; noted first so a crash in
  -- between leaves them to the sweep.
  insert into kiln_private.object_intents (location)
    select l from unnest(v_locations) l where l is not null
    on conflict do nothing;

  -- Generations keep their record, status and cost; their result says when the image went.
  update kiln_private.generations g
    set result = g.result || jsonb_build_object('expiredAt', v_at)
    from unnest(v_paths) p
    where g.id = kiln_private.object_generation_id(p) and g.result->>'path' = p and not g.result ? 'expiredAt';
  update kiln_private.workflow_run_outputs o
    set result = o.result || jsonb_build_object('expiredAt', v_at)
    from unnest(v_paths) p
    where o.generation_id = kiln_private.object_generation_id(p) and o.result->>'path' = p and not o.result ? 'expiredAt';
  -- Write-backs on saved workflows: the output node's result loses its path (a later run must
  -- not read it as an input) and says when it expired.
  update kiln_private.workflows w
    set graph = jsonb_set(w.graph, '{nodes}', (
      select jsonb_agg(case when e.n->>'kind' = 'output' and e.n->'result'->>'path' = any (v_paths)
                            then e.n || jsonb_build_object('result', ((e.n->'result') - 'path') || jsonb_build_object('expiredAt', v_at))
                            else e.n end order by e.i)
      from jsonb_array_elements(w.graph->'nodes') with ordinality as e(n, i)))
    where w.id in (
        select r.workflow_id from kiln_private.workflow_runs r
        where r.id in (select (regexp_match(p, '^[0-9a-f-]{36}/workflows/([0-9a-f-]{36})/'))[1]::uuid from unnest(v_paths) p))
      and jsonb_typeof(w.graph->'nodes') = 'array'
      and exists (select 1 from jsonb_array_elements(w.graph->'nodes') n
                  where n->>'kind' = 'output' and n->'result'->>'path' = any (v_paths));

  return query select u.p, u.l from unnest(v_paths, v_locations) as u(p, l);
end;
$$;
comment on function kiln.expire_objects(bigint,integer) is 'Retention: deletes up to p_limit account-owned objects older than p_max_age_seconds (seeds never), leaves tombstones (410 gone), notes their bucket keys for deletion, and marks the generations, run outputs and workflow write-backs that named them with expiredAt. Records, costs and the ledger are untouched. Returns the removed paths and bucket keys.';

-- ---------------------------------------------------------------- store migrate

create or replace function kiln.list_objects_to_move(p_to text, p_after text, p_limit integer)
returns table (path text, backend text, location text, sha256 bytea, byte_size integer, content_type text)
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
  select o.path, o.backend, o.location, o.sha256, o.byte_size, o.content_type
  from kiln_private.objects o
  where o.backend = case p_to when 's3' then 'postgres' else 's3' end and o.path > coalesce(p_after, '')
  order by o.path
  limit p_limit;
$$;
comment on function kiln.list_objects_to_move(text,text,integer) is 'store migrate: the next objects (by path, after p_after) not yet on backend p_to.';

create or replace function kiln.count_objects_by_backend()
returns table (backend text, objects bigint, bytes bigint)
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
  select o.backend, count(*), coalesce(sum(o.byte_size), 0)::bigint from kiln_private.objects o group by o.backend;
$$;
comment on function kiln.count_objects_by_backend() is 'Objects and bytes per backend (store migrate''s progress total).';

create or replace function kiln.read_object_bytes(p_path text)
returns bytea
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
  select o.data from kiln_private.objects o where o.path = p_path and o.backend = 'postgres';
$$;
comment on function kiln.read_object_bytes(text) is 'store migrate: the bytes of a postgres-backed object (null when absent or already moved).';

create or replace function kiln.switch_object(p_path text, p_from_location text, p_data bytea, p_location text, p_sha256 bytea)
returns boolean
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_old kiln_private.objects;
begin
  select * into v_old from kiln_private.objects o where o.path = p_path for update;
  -- Gone (retention) or moved by someone else meanwhile: nothing to switch.
  if not found or v_old.location is distinct from p_from_location or (p_location is null) = (v_old.backend = 'postgres') then
    return false;
  end if;
  if p_data is not null and (length(p_data) <> v_old.byte_size or sha256(p_data) <> p_sha256) then
    raise exception 'copied bytes do not match the object' using errcode = 'KI001';
  end if;
  if v_old.sha256 is not null and v_old.sha256 <> p_sha256 then
    raise exception 'copied bytes do not match the object' using errcode = 'KI001';
  end if;
  update kiln_private.objects o
    set backend = case when p_location is null then 'postgres' else 's3' end,
        data = p_data, location = p_location, sha256 = p_sha256
    where o.path = p_path;
  if p_location is not null then
    perform kiln_private.take_object_intent(p_location);
  end if;
  -- The old key is kept for the grace period (a presigned URL may still point at it), then swept.
  if v_old.location is not null then
    insert into kiln_private.object_intents (location) values (v_old.location) on conflict (location) do update set created_at = now();
  end if;
  return true;
end;
$$;
comment on function kiln.switch_object(text,text,bytea,text,bytea) is 'store migrate: points one object at its verified copy — bytes in p_data (to postgres) or under p_location (to s3) — if it is still where the copy was made from (p_from_location; null = postgres). The given-up key is noted for the sweep. False when the object is gone or already moved. KI001 when the copy''s size or hash differ.';

-- ---------------------------------------------------------------- run results show expiry

-- Redefined (was 000026): adds `expiredAt` to each result, nothing else changes.
create or replace function kiln.get_workflow_run(p_account_id uuid, p_workflow_id uuid, p_run_id uuid)
returns json
language sql
stable
security definer
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
               'costMicros', coalesce(o.cost_micros, 0),
               'model', o.result->>'model',
               'expiredAt', o.result->>'expiredAt')
             order by o.finished_at, o.ordinal), '[]'::json)
      from kiln_private.workflow_run_outputs o
      where o.run_id = r.id and o.status in ('completed', 'failed', 'skipped')))
  from kiln_private.workflow_runs r
  where r.id = p_run_id and r.account_id = p_account_id and r.workflow_id = p_workflow_id;
$$;
comment on function kiln.get_workflow_run(uuid,uuid,uuid) is 'A run''s state (with the run it retried, if any) and its settled results (in settling order, with expiredAt once retention removed an image) for its owner, when it belongs to that workflow; null otherwise.';
