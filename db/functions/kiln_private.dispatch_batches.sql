-- functions/kiln_private.dispatch_batches.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.dispatch_batches.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.dispatch_batches(p_limit integer)
 RETURNS integer
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  return (select d.n from kiln_private.dispatch_batch_lines(p_limit, null) d);
end;
$function$;
comment on function kiln_private.dispatch_batches(integer) is 'Queues up to p_limit batch lines in groups (a batch__run job per group of consecutive lines, flagged batch: workers keep slots such jobs never take), round-robin by billing scope, within each account''s free parallel slots (kiln_private.batch_capacity), at priority 10 + the lines the scope already has queued: interactive work (priority 0) always starts first. A group is up to half the account''s slots (at most 10); a smaller one only when nothing of the account is queued or running. Returns how many lines it took.';
