--! Previous: sha1:3640b865503446d7f1b1d99ec6a9bf992a17772f
--! Hash: sha1:ec57c440cf0c5e20a4c04776d0db92adc4dcd0e3
--! Message: one authorization path

--! split: 1-current.sql
-- One authorization path: every REST route authorizes in the same SQL call as its read or write,
-- batched with the calls that arrive together (kiln.authorize_requests is the primitive). The
-- workflow reads join it here like GET /generations/{id} does (kiln.poll_generations).

drop function if exists kiln.list_workflows_for_keys(bytea[], int, int[], int[]);
drop function if exists kiln.get_workflow_runs_for_keys(bytea[], int, uuid[], uuid[]);

create function kiln.list_workflows_for_keys(p_key_hashes bytea[], p_read_rpm int, p_limits int[], p_offsets int[])
  returns table (ord int, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[],
                 retry_after int, body json)
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select r.ord, r.status, r.key_id, r.account_id, r.workspace_id, r.tier, r.scopes, r.retry_after,
         case when r.status = 'ok' then kiln.list_workflows(r.account_id, p_limits[r.ord], p_offsets[r.ord]) end
  from kiln.authorize_requests(
         p_key_hashes,
         array_fill('read'::text, array[cardinality(p_key_hashes)]),
         array_fill('read'::text, array[cardinality(p_key_hashes)]),
         array_fill(p_read_rpm, array[cardinality(p_key_hashes)]),
         array_fill(false, array[cardinality(p_key_hashes)])) r;
$$;
comment on function kiln.list_workflows_for_keys(bytea[], int, int[], int[]) is
  'GET /workflows for a batch in one transaction: authorizes each key (read scope, the per-key read bucket at p_read_rpm and the key''s own rpm) and, when admitted, returns that page of the key''s account''s workflows (kiln.list_workflows).';
alter function kiln.list_workflows_for_keys(bytea[], int, int[], int[]) set plan_cache_mode = force_generic_plan;

create function kiln.get_workflow_runs_for_keys(p_key_hashes bytea[], p_read_rpm int, p_workflow_ids uuid[], p_run_ids uuid[])
  returns table (ord int, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[],
                 retry_after int, body json)
  language sql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  select r.ord, r.status, r.key_id, r.account_id, r.workspace_id, r.tier, r.scopes, r.retry_after,
         case when r.status = 'ok' then kiln.get_workflow_run(r.account_id, p_workflow_ids[r.ord], p_run_ids[r.ord]) end
  from kiln.authorize_requests(
         p_key_hashes,
         array_fill('read'::text, array[cardinality(p_key_hashes)]),
         array_fill('read'::text, array[cardinality(p_key_hashes)]),
         array_fill(p_read_rpm, array[cardinality(p_key_hashes)]),
         array_fill(false, array[cardinality(p_key_hashes)])) r;
$$;
comment on function kiln.get_workflow_runs_for_keys(bytea[], int, uuid[], uuid[]) is
  'GET /workflows/{id}/runs/{runId} for a batch in one transaction: authorizes each key (read scope, the per-key read bucket and the key''s own rpm) and, when admitted, returns that run of the key''s account (kiln.get_workflow_run; null body when there is none).';
alter function kiln.get_workflow_runs_for_keys(bytea[], int, uuid[], uuid[]) set plan_cache_mode = force_generic_plan;

-- Workers register leases now (kiln.register_worker, kiln.beat_worker(text)); the pre-lease
-- heartbeat goes.
drop function if exists kiln.beat_worker(text, text, int);
