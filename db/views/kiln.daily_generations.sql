-- views/kiln.daily_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include views/kiln.daily_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

create or replace view kiln.daily_generations as
 SELECT (created_at AT TIME ZONE 'UTC'::text)::date AS day,
    account_id,
    workspace_id,
    key_id,
    model_id,
    origin,
    type,
    count(*) AS generations,
    count(*) FILTER (WHERE status = 'completed'::text) AS completed,
    count(*) FILTER (WHERE status = 'failed'::text) AS failed,
    count(*) FILTER (WHERE status = ANY (ARRAY['pending'::text, 'processing'::text])) AS in_flight,
    COALESCE(sum(cost_micros), 0::numeric)::bigint AS cost_micros,
    count(*) FILTER (WHERE batch_id IS NOT NULL) AS batch_generations,
    COALESCE(sum(cost_micros) FILTER (WHERE batch_id IS NOT NULL), 0::numeric)::bigint AS batch_cost_micros
   FROM kiln_private.generations g
  GROUP BY ((created_at AT TIME ZONE 'UTC'::text)::date), account_id, workspace_id, key_id, model_id, origin, type;
comment on view kiln.daily_generations is 'Generations per UTC day (of creation), account, workspace, API key, model, origin and type: totals by outcome and billed cost in microdollars, and how many of them were batch lines (batch_generations) and their cost (batch_cost_micros).';
