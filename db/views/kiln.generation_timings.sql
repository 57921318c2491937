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
    error,
    end_user,
    metadata
   FROM kiln_private.generations g;
comment on view kiln.generation_timings is 'One row per generation with its queued (created → first started) and processing (started → finished) times in whole milliseconds, for percentiles over any window (null while not yet started or finished), and what its executions went through: attempts (executions that ran to an end, of max_attempts), crashes (executions cut off by a dead worker and taken over; crash_streak in a row), the last transient error and the final error; end_user and metadata: the request''s attribution (null when not given).';
