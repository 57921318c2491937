-- functions/kiln_private.require_admin.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.require_admin.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.require_admin(p_account_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- The authorization path already refused a non-admin (the admin scope counts only for admins);
  -- a write checks again in its own transaction, so a revoked admin cannot race it.
  perform 1 from kiln_private.accounts a where a.id = p_account_id and (a.is_admin or a.admin_by_group);
  if not found then
    raise exception 'This account is not an admin.' using errcode = 'KF001';
  end if;
end;
$function$;
comment on function kiln_private.require_admin(uuid) is 'Raises KF001 ("This account is not an admin.") unless the account is an admin (operator flag or SSO group).';
