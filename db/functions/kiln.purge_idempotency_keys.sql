-- functions/kiln.purge_idempotency_keys.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.purge_idempotency_keys.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.purge_idempotency_keys(p_limit integer)
 RETURNS integer
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  with gone as (
    delete from kiln_private.idempotency_keys
    where ctid = any (array(
      select ctid from kiln_private.idempotency_keys where expires_at <= now() order by expires_at limit p_limit))
    returning 1
  )
  select count(*)::int from gone;
$function$;
comment on function kiln.purge_idempotency_keys(integer) is 'Deletes up to p_limit expired Idempotency-Key records (the workers'' sweep calls it; a claim also takes over an expired record of its own key).';
