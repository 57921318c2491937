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
