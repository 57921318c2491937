-- functions/kiln.freeze_event_body.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.freeze_event_body.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.freeze_event_body(p_event_id bigint, p_body text)
 RETURNS text
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- First writer wins: every later delivery and stream sends the same bytes.
  with u as (update kiln_private.events set body = p_body where id = p_event_id and body is null returning body)
  select coalesce((select body from u), (select body from kiln_private.events where id = p_event_id));
$function$;
comment on function kiln.freeze_event_body(bigint,text) is 'Stores an event''s rendered message body unless one is stored already; returns the stored one.';
