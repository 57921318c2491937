--! Previous: sha1:3748452b19412f4dcce3aa980fcdb7ea88a9205e
--! Hash: sha1:25182536be6fabaa3eee7c08cec3f076191a1e12
--! Message: Reads that tolerate lag on a replica (the *_for_callers functions), and kiln_analyst: the analyst views only; kiln functions are not PUBLIC's

--! split: 1-current.sql
-- Issue 31: reads that tolerate lag run on a streaming replica, and analysts get a least-privilege
-- role. Idempotent (create or replace; grants and revokes repeat harmlessly).

-- ---------------------------------------------------------------- reads for authorized callers
-- On a replica nothing can be written, so the list calls that authorize keys and debit the read
-- bucket in the same statement (kiln.*_for_keys) cannot run there. The API authorizes on the
-- primary (kiln.authorize_requests: the same scope, read bucket and key rpm as
-- kiln_private.authorize_reads) and then reads, batched, with these: set-based and read-only
-- (stable), each the batch form of the one function that holds its rule.

create or replace function kiln.list_generations_for_callers(
  p_account_ids uuid[], p_workspace_ids uuid[], p_origin text, p_limits int[], p_before_ats timestamptz[],
  p_before_ids uuid[], p_statuses text[], p_types text[], p_model_ids text[], p_sinces timestamptz[])
returns table (ord int, body json)
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  -- Per request, statuses and types come as comma-separated lists (null = any).
  select c.ord::int, kiln.list_generations(
           c.account_id, p_workspace_ids[c.ord], p_origin, p_limits[c.ord], p_before_ats[c.ord], p_before_ids[c.ord],
           string_to_array(p_statuses[c.ord], ','), string_to_array(p_types[c.ord], ','), p_model_ids[c.ord], p_sinces[c.ord])
  from unnest(p_account_ids) with ordinality c(account_id, ord);
$$;
comment on function kiln.list_generations_for_callers(uuid[], uuid[], text, int[], timestamptz[], uuid[], text[], text[], text[], timestamptz[]) is 'GET /generations for a batch of callers already authorized (account, billing scope): the page of each (kiln.list_generations), by 1-based ord. Read-only: runs on a streaming replica.';

create or replace function kiln.get_daily_usage_for_callers(p_account_ids uuid[], p_workspace_ids uuid[], p_froms date[], p_tos date[])
returns table (ord int, body json)
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select c.ord::int, kiln.get_daily_usage(c.account_id, p_workspace_ids[c.ord], p_froms[c.ord], p_tos[c.ord])
  from unnest(p_account_ids) with ordinality c(account_id, ord);
$$;
comment on function kiln.get_daily_usage_for_callers(uuid[], uuid[], date[], date[]) is 'GET /usage/daily for a batch of callers already authorized: the daily usage of each one''s billing scope (kiln.get_daily_usage; the caller checks the range first), by 1-based ord. Read-only: runs on a streaming replica.';

create or replace function kiln.list_workflows_for_callers(p_account_ids uuid[], p_workspace_ids uuid[], p_limits int[], p_offsets int[])
returns table (ord int, body json)
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select c.ord::int, kiln.list_workflows(c.account_id, p_workspace_ids[c.ord], p_limits[c.ord], p_offsets[c.ord])
  from unnest(p_account_ids) with ordinality c(account_id, ord);
$$;
comment on function kiln.list_workflows_for_callers(uuid[], uuid[], int[], int[]) is 'GET /workflows for a batch of callers already authorized: the page of each one''s scope''s workflows (kiln.list_workflows), by 1-based ord. Read-only: runs on a streaming replica.';

create or replace function kiln.list_workflow_runs_for_callers(p_account_ids uuid[], p_workspace_ids uuid[], p_workflow_ids uuid[], p_limits int[], p_offsets int[])
returns table (ord int, body json)
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select c.ord::int, kiln.list_workflow_runs(c.account_id, p_workspace_ids[c.ord], p_workflow_ids[c.ord], p_limits[c.ord], p_offsets[c.ord])
  from unnest(p_account_ids) with ordinality c(account_id, ord);
$$;
comment on function kiln.list_workflow_runs_for_callers(uuid[], uuid[], uuid[], int[], int[]) is 'GET /workflows/{id}/runs for a batch of callers already authorized: the page of runs of each (kiln.list_workflow_runs; null body when the workflow is not the caller''s scope''s), by 1-based ord. Read-only: runs on a streaming replica.';

-- ---------------------------------------------------------------- kiln_analyst
-- The role itself is made by `kiln migrate` before the migrations run (src/db/roles.ts), as
-- graphile-migrate advises: roles are cluster-wide, outside any one database's migrations.
-- Members of kiln_analyst read the documented analyst views (docs/analysts.md) and nothing else.
--
-- Every function is executable by PUBLIC unless revoked, and schema kiln holds the service's
-- security definer functions (key creation, budgets, …): with USAGE on kiln an analyst could call
-- them. So kiln's functions are not PUBLIC's — the service calls them as their owner — including
-- those made by later migrations (default privileges of the role that migrates).
revoke execute on all functions in schema kiln from public;
alter default privileges in schema kiln revoke execute on functions from public;

grant usage on schema kiln to kiln_analyst;
grant select on kiln.daily_spend, kiln.daily_generations, kiln.daily_workflow_runs, kiln.generation_latency,
  kiln.generation_timings, kiln.models, kiln.provider_health, kiln.audit_log to kiln_analyst;
