-- functions/kiln_private.lease_key_held.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.lease_key_held.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.lease_key_held(p_lease_key integer)
 RETURNS boolean
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select exists (
    select 1 from pg_locks l
    where l.locktype = 'advisory' and l.granted
      and l.database = (select oid from pg_database where datname = current_database())
      and l.classid = 1263094862::oid and l.objid = p_lease_key::oid and l.objsubid = 2);
$function$;
comment on function kiln_private.lease_key_held(integer) is 'Whether some session of this database holds the worker lease lock with this key.';
