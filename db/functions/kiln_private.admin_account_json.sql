-- functions/kiln_private.admin_account_json.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.admin_account_json.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.admin_account_json(a kiln_private.accounts, p_used bigint)
 RETURNS json
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'id', a.id, 'email', a.email, 'tier', a.tier, 'budgetMicros', a.budget_micros, 'usedMicros', coalesce(p_used, 0),
    'keyCount', (select count(*) from kiln_private.api_keys k
                 where k.account_id = a.id and k.kind = 'key' and k.revoked_at is null
                   and (k.expires_at is null or k.expires_at > now())),
    'admin', a.is_admin or a.admin_by_group);
$function$;
comment on function kiln_private.admin_account_json(kiln_private.accounts,bigint) is 'An account as the admin accounts page lists it: its live keys counted through api_keys_account_idx.';
