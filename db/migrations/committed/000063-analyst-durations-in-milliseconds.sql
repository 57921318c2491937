--! Previous: sha1:e503981fcb1022d2d0aa20271408de6ac093ffe3
--! Hash: sha1:9487879421b13a8ce8754e40f9f8fcb2e2abbe45
--! Message: Analyst views: durations in whole milliseconds

--! split: 1-current.sql
-- Enter migration here

--! split: 5-analyst-rounding.sql
-- The analyst views' durations in whole milliseconds (the unit of their `_ms` columns) instead of
-- microsecond numerics and floating-point percentiles (docs/analysts.md). Money in these views is
-- already integer microdollars. Same columns, names, types and order: the views keep their grants.
-- included from db/views/kiln.generation_timings.sql
-- views/kiln.generation_timings.sql: the current definition. Edit it here, and ship the change with
-- `--! include views/kiln.generation_timings.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

create or replace view kiln.generation_timings as
 SELECT id,
    (created_at AT TIME ZONE 'UTC'::text)::date AS day,
    account_id,
    workspace_id,
    key_id,
    model_id,
    origin,
    type,
    status,
    attempts,
    cost_micros,
    created_at,
    round(EXTRACT(epoch FROM started_at - created_at) * 1000::numeric) AS queued_ms,
    round(EXTRACT(epoch FROM finished_at - started_at) * 1000::numeric) AS processing_ms,
    max_attempts,
    crashes,
    crash_streak,
    last_error,
    error
   FROM kiln_private.generations g;
comment on view kiln.generation_timings is 'One row per generation with its queued (created → first started) and processing (started → finished) times in whole milliseconds, for percentiles over any window (null while not yet started or finished), and what its executions went through: attempts (executions that ran to an end, of max_attempts), crashes (executions cut off by a dead worker and taken over; crash_streak in a row), the last transient error and the final error.';
-- end of db/views/kiln.generation_timings.sql
-- included from db/views/kiln.generation_latency.sql
-- views/kiln.generation_latency.sql: the current definition. Edit it here, and ship the change with
-- `--! include views/kiln.generation_latency.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

create or replace view kiln.generation_latency as
 SELECT (created_at AT TIME ZONE 'UTC'::text)::date AS day,
    model_id,
    origin,
    count(*) FILTER (WHERE started_at IS NOT NULL) AS started,
    round(percentile_cont(0.5::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM started_at - created_at) * 1000::numeric)::double precision)) FILTER (WHERE started_at IS NOT NULL)) AS queued_p50_ms,
    round(percentile_cont(0.95::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM started_at - created_at) * 1000::numeric)::double precision)) FILTER (WHERE started_at IS NOT NULL)) AS queued_p95_ms,
    round(percentile_cont(0.99::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM started_at - created_at) * 1000::numeric)::double precision)) FILTER (WHERE started_at IS NOT NULL)) AS queued_p99_ms,
    count(*) FILTER (WHERE status = 'completed'::text) AS completed,
    round(percentile_cont(0.5::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM finished_at - started_at) * 1000::numeric)::double precision)) FILTER (WHERE status = 'completed'::text)) AS processing_p50_ms,
    round(percentile_cont(0.95::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM finished_at - started_at) * 1000::numeric)::double precision)) FILTER (WHERE status = 'completed'::text)) AS processing_p95_ms,
    round(percentile_cont(0.99::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM finished_at - started_at) * 1000::numeric)::double precision)) FILTER (WHERE status = 'completed'::text)) AS processing_p99_ms
   FROM kiln_private.generations g
  GROUP BY ((created_at AT TIME ZONE 'UTC'::text)::date), model_id, origin;
comment on view kiln.generation_latency is 'Generation latency per UTC day, model and origin in whole milliseconds: queued = created → first started (waiting for a worker and a parallel slot), processing = started → completed (completed generations only); p50/p95/p99.';
-- end of db/views/kiln.generation_latency.sql
-- included from db/views/kiln.daily_workflow_runs.sql
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
-- end of db/views/kiln.daily_workflow_runs.sql
