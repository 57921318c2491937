-- functions/kiln_private.end_user_period.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.end_user_period.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.end_user_period(p_period text, p_at timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  -- 'day': the UTC day; 'month': the calendar month in UTC.
  select date_trunc(p_period, p_at at time zone 'UTC') at time zone 'UTC';
$function$;
comment on function kiln_private.end_user_period(text,timestamp with time zone) is 'Start of the end-user cap period (''day'' = the UTC day, ''month'' = the calendar month in UTC) containing p_at.';
