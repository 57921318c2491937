-- functions/kiln.read_events.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.read_events.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.read_events(p_scope_id uuid, p_after_tx xid8, p_after_id bigint, p_since timestamp with time zone, p_limit integer)
 RETURNS TABLE(tx text, id bigint, type text, occurred_at text, data json, body text)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- Only transactions that have ended (below the snapshot's xmin) can be streamed: none of them
  -- can add an event any more, so nothing can appear behind the cursor later.
  select e.tx::text, e.id, e.type, to_char(e.occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), e.data, e.body
  from kiln_private.events e
  where e.scope_id = p_scope_id
    and e.tx < pg_snapshot_xmin(pg_current_snapshot())
    and (p_after_tx is null or (e.tx, e.id) > (p_after_tx, p_after_id))
    and (p_since is null or e.occurred_at >= p_since)
  order by e.tx, e.id
  limit p_limit;
$function$;
comment on function kiln.read_events(uuid,xid8,bigint,timestamp with time zone,integer) is 'Events of a scope after a (tx, id) cursor, in (tx, id) order, from ended transactions only (the stream''s gap-free order); p_since bounds a fresh start.';
