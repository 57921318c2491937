--! Previous: sha1:26baa026547bd6c5af11589781d9cdb351926bfd
--! Hash: sha1:738a6439e6049f023031142aa23e7daf1c7e6fae
--! Message: A run's graph for the console

--! split: 1-current.sql
-- Issue 21 (console): a run's graph — the structure of its immutable snapshot, for the run view
-- (GET /workflows/{id}/runs/{runId}/graph). Re-runnable.

create or replace function kiln.get_workflow_run_graph(p_account_id uuid, p_workflow_id uuid, p_run_id uuid)
  returns jsonb
  language sql
  stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
  -- Structure only (ids, kinds, labels, output types, models, platforms): prompt and text values
  -- stay out, as in every other run answer.
  select jsonb_build_object(
    'runId', r.id,
    'workflowId', r.workflow_id,
    'nodes', coalesce((
      select jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
               'id', n->>'id', 'kind', n->>'kind', 'label', n->>'label', 'output', n->>'output',
               'model', n->>'model', 'platform', n->>'platform')) order by i)
      from jsonb_array_elements(case when jsonb_typeof(r.snapshot->'nodes') = 'array' then r.snapshot->'nodes' else '[]' end) with ordinality as x(n, i)
    ), '[]'::jsonb),
    'edges', coalesce((
      select jsonb_agg(jsonb_build_object('from', e->>'from', 'to', e->>'to') order by i)
      from jsonb_array_elements(case when jsonb_typeof(r.snapshot->'edges') = 'array' then r.snapshot->'edges' else '[]' end) with ordinality as x(e, i)
    ), '[]'::jsonb))
  from kiln_private.workflow_runs r
  where r.id = p_run_id and r.workflow_id = p_workflow_id and r.account_id = p_account_id;
$$;
comment on function kiln.get_workflow_run_graph(uuid,uuid,uuid) is 'The graph of a run''s snapshot (node ids, kinds, labels, output types, models, platforms and edges; no prompt or text values) for the account that owns the run; null when there is none.';

create or replace function kiln.get_workflow_run_graphs_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_workflow_ids uuid[], p_run_ids uuid[])
  returns table(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body jsonb)
  language sql
  volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
as $$
  select r.*, case when r.status = 'ok' then kiln.get_workflow_run_graph(r.account_id, p_workflow_ids[r.ord], p_run_ids[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$$;
comment on function kiln.get_workflow_run_graphs_for_keys(bytea[],integer,uuid[],uuid[]) is 'GET /workflows/{id}/runs/{runId}/graph for a batch in one transaction: authorizes each key (read scope, the per-key read bucket and the key''s own rpm) and, when admitted, returns the graph of that run of the key''s account (kiln.get_workflow_run_graph; null body when there is none).';
