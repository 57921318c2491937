-- functions/kiln_private.period_start.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.period_start.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.period_start(anchor timestamp with time zone, at timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  -- Whole months elapsed since the anchor; the period is [anchor + n months, anchor + n+1 months), in UTC.
  select ((anchor at time zone 'UTC') + make_interval(months => greatest(0,
    (extract(year from age(at at time zone 'UTC', anchor at time zone 'UTC')) * 12
     + extract(month from age(at at time zone 'UTC', anchor at time zone 'UTC')))::int))) at time zone 'UTC';
$function$;
comment on function kiln_private.period_start(timestamp with time zone,timestamp with time zone) is 'Start of the monthly budget period containing `at`, for periods anchored at `anchor` (month arithmetic in UTC; inlined by the planner).';
