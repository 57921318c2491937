-- functions/kiln.expire_batches.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.expire_batches.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.expire_batches(p_limit integer)
 RETURNS SETOF uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- Batches past their expiry are marked (no line of them is queued or started any more)…
  update kiln_private.batches b set expired = true, updated_at = now()
    where b.id in (select x.id from kiln_private.batches x
                   where x.status = 'in_progress' and x.expires_at <= now() and not x.expired
                   order by x.expires_at limit p_limit for update skip locked);
  -- …and every batch whose lines are left to end is returned, for kiln.end_batch_lines (a batch
  -- canceled or expired whose lines a crash left, too).
  return query
    select b.id from kiln_private.batches b
    where (b.status = 'canceling' or (b.status = 'in_progress' and b.expired))
    order by b.updated_at
    limit p_limit;
end;
$function$;
comment on function kiln.expire_batches(integer) is 'The worker''s sweep: marks up to p_limit batches past their expiresAt as expired, and returns the batches (at most p_limit) whose lines kiln.end_batch_lines has to end: expired ones and canceling ones.';
