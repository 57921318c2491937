-- functions/kiln.dispatch_batches.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.dispatch_batches.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.dispatch_batches(p_limit integer)
 RETURNS integer
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select kiln_private.dispatch_batches(least(greatest(p_limit, 0), 1000));
$function$;
comment on function kiln.dispatch_batches(integer) is 'The worker''s sweep: queues batch lines that free slots now allow (a slot freed by an interactive generation, a line whose queueing was missed), at most p_limit (≤ 1000). Lines are otherwise queued when a batch is created and when one of its lines ends.';
