-- functions/kiln.events_held_back.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.events_held_back.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.events_held_back(p_scope_id uuid, p_after_tx xid8, p_after_id bigint)
 RETURNS boolean
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- Committed events that kiln.read_events holds back while an older transaction is still open:
  -- the stream reads again shortly instead of waiting for the next notification.
  select exists (
    select 1 from kiln_private.events e
    where e.scope_id = p_scope_id and e.tx >= pg_snapshot_xmin(pg_current_snapshot())
      and (p_after_tx is null or (e.tx, e.id) > (p_after_tx, p_after_id)));
$function$;
comment on function kiln.events_held_back(uuid,xid8,bigint) is 'Whether the scope has committed events after the cursor that kiln.read_events does not return yet (an older transaction is still open).';
