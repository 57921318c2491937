-- functions/kiln.key_carries_scope.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.key_carries_scope.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.key_carries_scope(p_key_id uuid, p_scope text)
 RETURNS boolean
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select coalesce((select p_scope = any (k.scopes) from kiln_private.api_keys k where k.id = p_key_id), false);
$function$;
comment on function kiln.key_carries_scope(uuid,text) is 'Whether a key (or session) was given a scope, whatever its user may use: a refused admin request with the admin scope is a user who is not an admin, and says so.';
