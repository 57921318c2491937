-- functions/kiln_private.period_end.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.period_end.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.period_end(p_anchor timestamp with time zone, p_period_start timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- A period lasts 28 to 31 days, so 32 days after its start is inside the next one.
  select kiln_private.period_start(p_anchor, p_period_start + interval '32 days');
$function$;
comment on function kiln_private.period_end(timestamp with time zone,timestamp with time zone) is 'The end of the budget period that starts at p_period_start (anchored at p_anchor): the next period''s start.';
