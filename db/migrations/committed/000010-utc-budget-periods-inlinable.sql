--! Previous: sha1:1c5bf402a995436a1348a0991bb63abd3aada038
--! Hash: sha1:468fd0939a29aa9de2c19a05c97e41798fad718b
--! Message: utc budget periods, inlinable

--! split: 1-current.sql
-- Enter migration here
-- Budget periods in UTC, and cheap: kiln_private.period_start was declared immutable while its
-- body used timestamptz age() and interval arithmetic, which depend on the session's TimeZone.
-- So the planner would not inline it, and every call ran as a separate SQL-function statement
-- (about one per usage row and reservation). It also meant two sessions with different
-- TimeZone settings could disagree on a month boundary. The same arithmetic, done on UTC
-- timestamps, is truly immutable and inlines. On a UTC server, which is Postgres's default
-- in the official images and what Kiln's embedded cluster uses, results are unchanged.
create or replace function kiln_private.period_start(anchor timestamptz, at timestamptz) returns timestamptz
  language sql immutable parallel safe
as $$
  -- Whole months elapsed since the anchor; the period is [anchor + n months, anchor + n+1 months), in UTC.
  select ((anchor at time zone 'UTC') + make_interval(months => greatest(0,
    (extract(year from age(at at time zone 'UTC', anchor at time zone 'UTC')) * 12
     + extract(month from age(at at time zone 'UTC', anchor at time zone 'UTC')))::int))) at time zone 'UTC';
$$;
comment on function kiln_private.period_start(timestamptz, timestamptz) is
  'Start of the monthly budget period containing `at`, for periods anchored at `anchor` (month arithmetic in UTC; inlined by the planner).';
