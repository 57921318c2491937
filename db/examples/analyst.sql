-- Analyst queries over Kiln's SQL views (schema `kiln`). psql-ready: run one, or all with
--   psql "$DATABASE_URL" -f db/examples/analyst.sql
-- Money is integer microdollars (1,000,000 = 1 US dollar; dollars below are rounded to the
-- microdollar). Durations are whole milliseconds. Days are UTC.
-- test/analyst.views.test.ts runs every query below against seeded data.

-- name: spend-per-day
-- Spend and charge counts per day over the last 30 days.
select day,
       round(sum(spend_micros) / 1e6, 6) as spend_usd,
       sum(charges) as charges,
       sum(settled_charges) as settled,
       sum(released_charges) as released,
       round(sum(held_micros) / 1e6, 6) as still_reserved_usd
from kiln.daily_spend
where day >= current_date - 30
group by day
order by day;

-- name: top-accounts-this-month
-- The ten accounts that spent most this calendar month, with how they spent it.
select account_id,
       round(sum(spend_micros) / 1e6, 6) as spend_usd,
       round(sum(spend_micros) filter (where origin = 'api') / 1e6, 6) as api_usd,
       round(sum(spend_micros) filter (where origin = 'mcp') / 1e6, 6) as mcp_usd,
       round(sum(spend_micros) filter (where origin = 'workflow') / 1e6, 6) as workflow_usd,
       sum(settled_charges) as outputs
from kiln.daily_spend
where day >= date_trunc('month', current_date)
group by account_id
order by spend_usd desc
limit 10;

-- name: spend-by-key
-- Spend per API key and origin over the last 7 days (key_id null = not made with a key).
select key_id, origin,
       round(sum(spend_micros) / 1e6, 6) as spend_usd,
       sum(settled_charges) as outputs
from kiln.daily_spend
where day >= current_date - 7
group by key_id, origin
order by spend_usd desc;

-- name: top-end-users-this-month
-- The ten end users (the endUser your app sent: docs/api.md, "Attribution") with the most spend
-- this calendar month (UTC), per billing scope: settled charges plus reservations in flight, from
-- the roll-up by end user (kiln.usage_by_end_user), so a month costs a month of roll-up rows.
select account_id,
       workspace_id,
       end_user,
       round(sum(spend_micros + held_micros) / 1e6, 6) as spend_usd,
       sum(charges - released_charges) as charges,
       sum(open_reservations) as in_flight
from kiln.usage_by_end_user
where day >= date_trunc('month', now() at time zone 'UTC')::date
group by account_id, workspace_id, end_user
order by sum(spend_micros + held_micros) desc, end_user
limit 10;

-- name: spend-by-workspace
-- Team pools: spend per workspace and day (workspace_id null = personal budgets).
select day, workspace_id,
       round(sum(spend_micros) / 1e6, 6) as spend_usd,
       count(distinct account_id) as members_spending
from kiln.daily_spend
where workspace_id is not null
group by day, workspace_id
order by day, spend_usd desc;

-- name: batch-share
-- Batch lines (POST /batches) against everything else, per day over the last 30 days: spend and
-- outputs of each lane (the two add up to the day's totals).
select day,
       round(sum(batch_spend_micros) / 1e6, 6) as batch_usd,
       round(sum(spend_micros - batch_spend_micros) / 1e6, 6) as interactive_usd,
       sum(batch_settled_charges) as batch_outputs,
       sum(settled_charges - batch_settled_charges) as interactive_outputs
from kiln.daily_spend
where day >= current_date - 30
group by day
order by day;

-- name: batches-this-week
-- The batches of the last 7 days, largest spend first: progress and what each cost so far.
select id, account_id, status, total, completed, failed, canceled, unfinished,
       round(spend_micros / 1e6, 6) as spend_usd,
       round(held_micros / 1e6, 6) as still_reserved_usd,
       created_at, completed_at
from kiln.batches
where created_at >= now() - interval '7 days'
order by spend_micros desc, created_at desc;

-- name: model-mix
-- Generations per model and type over the last 7 days: volume, failure rate and average cost.
select model_id, type,
       sum(generations) as generations,
       sum(completed) as completed,
       sum(failed) as failed,
       round(100.0 * sum(failed) / nullif(sum(completed) + sum(failed), 0), 1) as failure_pct,
       round(sum(cost_micros)::numeric / nullif(sum(completed), 0)) as avg_cost_micros
from kiln.daily_generations
where day >= current_date - 7
group by model_id, type
order by generations desc;

-- name: origin-share
-- Where generations come from (REST API, MCP agents, the app, workflow runs), per day.
select day, origin,
       sum(generations) as generations,
       round(100.0 * sum(generations) / sum(sum(generations)) over (partition by day), 1) as pct_of_day
from kiln.daily_generations
group by day, origin
order by day, origin;

-- name: latency-per-day
-- Daily queue and processing latency percentiles per model (ms).
select day, model_id, origin, started, completed,
       queued_p50_ms, queued_p99_ms, processing_p50_ms, processing_p99_ms
from kiln.generation_latency
order by day desc, model_id, origin;

-- name: latency-last-7-days
-- Percentiles over a whole window (not an average of daily percentiles) from per-generation timings.
select model_id,
       count(*) as completed,
       round(percentile_cont(0.5) within group (order by queued_ms)) as queued_p50_ms,
       round(percentile_cont(0.99) within group (order by queued_ms)) as queued_p99_ms,
       round(percentile_cont(0.5) within group (order by processing_ms)) as processing_p50_ms,
       round(percentile_cont(0.99) within group (order by processing_ms)) as processing_p99_ms
from kiln.generation_timings
where status = 'completed' and created_at >= now() - interval '7 days'
group by model_id
order by completed desc;

-- name: slowest-generations
-- The slowest completed generations of the last day, for a closer look.
select id, model_id, origin, attempts, queued_ms, processing_ms
from kiln.generation_timings
where status = 'completed' and created_at >= now() - interval '1 day'
order by processing_ms desc
limit 20;

-- name: upstream-health
-- Each network model's upstream as the workers see it: skipped ones send their jobs to the
-- fallbacks; the error rate covers the last 15 minutes.
select model_id, provider, state, consecutive_failures, skipped_until, last_error, calls_15m, error_rate_15m
from kiln.provider_health
order by state <> 'healthy' desc, error_rate_15m desc nulls last, model_id;

