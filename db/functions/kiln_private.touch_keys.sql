-- functions/kiln_private.touch_keys.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.touch_keys.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.touch_keys(p_ids uuid[], p_at timestamp with time zone)
 RETURNS void
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  update kiln_private.api_keys k set last_used_at = p_at
  where k.id in (select x.id from kiln_private.api_keys x
                 where x.id = any (p_ids) and (x.last_used_at is null or x.last_used_at < p_at - interval '1 minute')
                 for no key update skip locked);
$function$;
comment on function kiln_private.touch_keys(uuid[],timestamp with time zone) is 'Records the keys'' last use when the stored one is over a minute old: at most one write per key a minute, and never a wait (rows another transaction holds are skipped).';
