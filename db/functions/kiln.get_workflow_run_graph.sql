-- functions/kiln.get_workflow_run_graph.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_workflow_run_graph.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_workflow_run_graph(p_account_id uuid, p_workflow_id uuid, p_run_id uuid)
 RETURNS jsonb
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
$function$;
comment on function kiln.get_workflow_run_graph(uuid,uuid,uuid) is 'The graph of a run''s snapshot (node ids, kinds, labels, output types, models, platforms and edges; no prompt or text values) for the account that owns the run; null when there is none.';
