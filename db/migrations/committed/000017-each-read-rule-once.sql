--! Previous: sha1:1e78e28d974ff9bfa5e8ca3d17277fd2b90c6888
--! Hash: sha1:15a32104a8e1d9bb78b6d5d8579196b1b6af78cc
--! Message: each read rule once

--! split: 1-current.sql
-- Each read rule once: the read authorization that GET routes join their read to, and the body of
-- a generation as the API reads it.

create or replace function kiln_private.authorize_reads(p_key_hashes bytea[], p_read_rpm int)
  returns table (ord int, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after int)
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select r.ord, r.status, r.key_id, r.account_id, r.workspace_id, r.tier, r.scopes, r.retry_after
  from kiln.authorize_requests(
         p_key_hashes,
         array_fill('read'::text, array[cardinality(p_key_hashes)]),
         array_fill('read'::text, array[cardinality(p_key_hashes)]),
         array_fill(p_read_rpm, array[cardinality(p_key_hashes)]),
         array_fill(false, array[cardinality(p_key_hashes)])) r;
$$;
comment on function kiln_private.authorize_reads(bytea[], int) is
  'kiln.authorize_requests for a batch of reads: read scope, the per-key read bucket at p_read_rpm and each key''s own rpm.';

create or replace function kiln_private.generation_body(g kiln_private.generations) returns json
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select json_build_object(
    'id', g.id,
    'status', g.status,
    'type', g.type,
    'result', case when g.status = 'completed' then g.result end,
    'error', case when g.status = 'failed' then g.error end,
    'cost_micros', g.cost_micros);
$$;
comment on function kiln_private.generation_body(kiln_private.generations) is
  'A generation as the API reads it: id, status, type, result (completed), error (failed) and billed cost.';

create or replace function kiln.poll_generations(p_key_hashes bytea[], p_read_rpm int, p_ids uuid[], p_origin text)
  returns table (ord int, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[],
                 retry_after int, body json)
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select r.*, case when r.status = 'ok' then (
           select kiln_private.generation_body(g) from kiln_private.generations g
           where g.id = p_ids[r.ord] and g.account_id = r.account_id and g.origin = p_origin) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$$;

create or replace function kiln.get_generations(p_account_ids uuid[], p_ids uuid[], p_origins text[])
  returns table (ord int, body json)
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  return query
    select s.i, kiln_private.generation_body(g)
    from generate_subscripts(p_ids, 1) as s(i)
    join kiln_private.generations g
      on g.id = p_ids[s.i] and g.account_id = p_account_ids[s.i] and g.origin = any (p_origins);
end;
$$;

create or replace function kiln.get_generation(p_account_id uuid, p_id uuid, p_origins text[]) returns json
  language sql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select body from kiln.get_generations(array[p_account_id], array[p_id], p_origins);
$$;
comment on function kiln.get_generation(uuid, uuid, text[]) is
  'kiln.get_generations for one: a generation''s state for its owner, when created through one of the given origins; null otherwise.';

create or replace function kiln.list_workflows_for_keys(p_key_hashes bytea[], p_read_rpm int, p_limits int[], p_offsets int[])
  returns table (ord int, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[],
                 retry_after int, body json)
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select r.*, case when r.status = 'ok' then kiln.list_workflows(r.account_id, p_limits[r.ord], p_offsets[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$$;

create or replace function kiln.get_workflow_runs_for_keys(p_key_hashes bytea[], p_read_rpm int, p_workflow_ids uuid[], p_run_ids uuid[])
  returns table (ord int, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[],
                 retry_after int, body json)
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select r.*, case when r.status = 'ok' then kiln.get_workflow_run(r.account_id, p_workflow_ids[r.ord], p_run_ids[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$$;

-- Replacing a function drops its SET clauses: pin the generic plans again (see migration 000009).
alter function kiln.poll_generations(bytea[], int, uuid[], text) set plan_cache_mode = force_generic_plan;
alter function kiln.get_generations(uuid[], uuid[], text[]) set plan_cache_mode = force_generic_plan;
alter function kiln.list_workflows_for_keys(bytea[], int, int[], int[]) set plan_cache_mode = force_generic_plan;
alter function kiln.get_workflow_runs_for_keys(bytea[], int, uuid[], uuid[]) set plan_cache_mode = force_generic_plan;
alter function kiln_private.authorize_reads(bytea[], int) set plan_cache_mode = force_generic_plan;
