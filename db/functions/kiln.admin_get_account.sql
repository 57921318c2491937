-- functions/kiln.admin_get_account.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.admin_get_account.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.admin_get_account(p_account_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select (kiln_private.admin_account_json(a, coalesce(b.held_micros + b.settled_micros, 0))::jsonb || jsonb_build_object(
    'periodStart', to_char(p.s at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'resetsAt', to_char(kiln_private.period_end(a.period_anchor, p.s) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'createdAt', to_char(a.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'keys', coalesce((select jsonb_agg(kiln_private.key_json(k, kiln_private.key_used(k))::jsonb order by k.created_at desc, k.id)
                      from kiln_private.api_keys k where k.account_id = a.id and k.kind = 'key'), '[]'),
    'workspaces', coalesce((select jsonb_agg(jsonb_build_object('id', w.id, 'name', w.name, 'role', m.role) order by w.name, w.id)
                            from kiln_private.workspace_members m join kiln_private.workspaces w on w.id = m.workspace_id
                            where m.account_id = a.id and m.left_at is null), '[]')))::json
  from kiln_private.accounts a
  cross join lateral (select kiln_private.period_start(a.period_anchor, now()) as s) p
  left join kiln_private.budget_periods b on b.pool_id = a.id and b.period_start = p.s
  where a.id = p_account_id;
$function$;
comment on function kiln.admin_get_account(uuid) is 'GET /admin/accounts/{id}: the account page: tier, budget, spend this period and when it resets, its keys (never a hash) and workspaces. No row for an unknown account.';
