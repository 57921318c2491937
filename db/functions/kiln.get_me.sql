-- functions/kiln.get_me.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_me.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_me(p_account_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object('email', a.email, 'admin', a.is_admin or a.admin_by_group)
  from kiln_private.accounts a where a.id = p_account_id;
$function$;
comment on function kiln.get_me(uuid) is 'GET /me: the email of an account and whether its user is an admin (set by an operator or by the SSO admin group); null when there is no such account.';
