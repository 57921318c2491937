-- views/kiln.daily_workflow_runs.sql: the current definition. Edit it here, and ship the change with
-- `--! include views/kiln.daily_workflow_runs.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

create or replace view kiln.daily_workflow_runs as
 SELECT (created_at AT TIME ZONE 'UTC'::text)::date AS day,
    account_id,
    workspace_id,
    key_id,
    origin,
    count(*) AS runs,
    count(*) FILTER (WHERE status = 'completed'::text) AS completed,
    count(*) FILTER (WHERE status = 'failed'::text) AS failed,
    count(*) FILTER (WHERE status = ANY (ARRAY['pending'::text, 'running'::text])) AS in_flight,
    COALESCE(sum(total), 0::bigint) AS outputs,
    COALESCE(sum(( SELECT COALESCE(sum(o.cost_micros), 0::numeric) AS "coalesce"
           FROM kiln_private.workflow_run_outputs o
          WHERE o.run_id = r.id)), 0::numeric)::bigint AS cost_micros,
    round(percentile_cont(0.5::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM completed_at - created_at) * 1000::numeric)::double precision)) FILTER (WHERE status = 'completed'::text)) AS duration_p50_ms
   FROM kiln_private.workflow_runs r
  GROUP BY ((created_at AT TIME ZONE 'UTC'::text)::date), account_id, workspace_id, key_id, origin;
comment on view kiln.daily_workflow_runs is 'Workflow runs per UTC day (of creation), account, workspace (null = personal budget), API key and origin: totals by outcome, outputs, billed cost in microdollars and the median enqueue → completed time in whole milliseconds.';
