-- functions/kiln.event_traceparent.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.event_traceparent.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.event_traceparent(p_event_id bigint)
 RETURNS text
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select coalesce(
    (select g.request->>'traceparent' from kiln_private.generations g where g.id = e.subject_id),
    (select g.request->>'traceparent' from kiln_private.generations g
       where g.run_id = e.subject_id and g.request ? 'traceparent' limit 1))
  from kiln_private.events e where e.id = p_event_id;
$function$;
comment on function kiln.event_traceparent(bigint) is 'The W3C traceparent stored with the request behind an event''s subject (a generation, or a run''s outputs), or null: a webhook delivery''s span joins that trace. Only read when tracing is on.';
