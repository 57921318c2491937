-- views/kiln.provider_health.sql: the current definition. Edit it here, and ship the change with
-- `--! include views/kiln.provider_health.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

create or replace view kiln.provider_health as
 SELECT m.id AS model_id,
    m.provider,
    m.upstream ->> 'baseUrl'::text AS base_url,
    COALESCE(m.upstream ->> 'model'::text, m.upstream ->> 'app'::text, m.upstream ->> 'version'::text) AS upstream_model,
        CASE
            WHEN h.skipped_until IS NULL THEN
            CASE
                WHEN COALESCE(h.consecutive_failures, 0) > 0 THEN 'failing'::text
                ELSE 'healthy'::text
            END
            WHEN h.skipped_until > now() THEN 'skipped'::text
            WHEN h.trial_until > now() THEN 'trial'::text
            ELSE 'awaiting_trial'::text
        END AS state,
    COALESCE(h.consecutive_failures, 0) AS consecutive_failures,
    h.skipped_until,
    h.last_error,
    h.last_error_at,
    h.last_success_at,
    COALESCE(r.calls, 0::bigint) AS calls_15m,
    COALESCE(r.failures, 0::bigint) AS failures_15m,
        CASE
            WHEN COALESCE(r.calls, 0::bigint) > 0 THEN round(r.failures::numeric / r.calls::numeric, 3)
            ELSE NULL::numeric
        END AS error_rate_15m
   FROM kiln_private.models m
     LEFT JOIN kiln_private.upstream_health h ON h.model_id = m.id
     LEFT JOIN LATERAL ( SELECT sum(um.successes + um.failures) AS calls,
            sum(um.failures) AS failures
           FROM kiln_private.upstream_minutes um
          WHERE um.model_id = m.id AND um.minute >= (date_trunc('minute'::text, now()) - '00:14:00'::interval)) r ON true
  WHERE m.provider <> 'local'::text;
comment on view kiln.provider_health is 'Each network catalog entry''s upstream as the workers see it: state (healthy, failing, skipped — its fallback is taken at once —, trial — one call in flight decides —, awaiting_trial), the consecutive failures, until when it is skipped, the last error (client-safe summary) and the calls, failures and error rate of the last 15 minutes.';
