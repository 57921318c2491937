-- functions/kiln_private.write_back_workflow_run.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.write_back_workflow_run.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.write_back_workflow_run(p_run_id uuid)
 RETURNS void
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  with done as (
    select o.output_node_id, jsonb_strip_nulls(jsonb_build_object(
             'type', o.type,
             'path', o.result->>'path',
             'mediaType', o.result->>'mediaType',
             'code', o.result->>'code',
             'costMicros', o.cost_micros,
             'runId', o.run_id,
             'completedAt', to_char(o.finished_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))) as result
    from kiln_private.workflow_run_outputs o
    where o.run_id = p_run_id and o.status = 'completed'
  )
  -- Not a save: version stays (docs/api.md, "Versions and If-Match") and no workflow.saved is
  -- emitted; workflow_run.completed announces the results.
  update kiln_private.workflows w
    set graph = jsonb_set(w.graph, '{nodes}', (
          select jsonb_agg(case when d.result is not null then e.n || jsonb_build_object('result', d.result) else e.n end order by e.i)
          from jsonb_array_elements(w.graph->'nodes') with ordinality as e(n, i)
          left join done d on e.n->>'kind' = 'output' and d.output_node_id = e.n->>'id')),
        updated_at = now()
    from kiln_private.workflow_runs r
    where r.id = p_run_id and w.id = r.workflow_id and w.deleted_at is null
      and jsonb_typeof(w.graph->'nodes') = 'array'
      -- Only output nodes that still exist in the saved graph receive a result.
      and exists (select 1 from jsonb_array_elements(w.graph->'nodes') n join done d
                  on n->>'kind' = 'output' and d.output_node_id = n->>'id');
$function$;
comment on function kiln_private.write_back_workflow_run(uuid) is 'Writes a completed run''s outputs onto the saved workflow''s output nodes that still exist (an update: bumps updated_at, not version — a client''s If-Match for its own edit still holds; deleted workflows are left alone).';
