-- functions/kiln.list_identities.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_identities.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_identities(p_account_id uuid)
 RETURNS SETOF kiln_private.identities
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select * from kiln_private.identities where account_id = p_account_id order by created_at;
$function$;
comment on function kiln.list_identities(uuid) is 'The OIDC identities linked to an account, oldest first.';
