-- functions/kiln_private.admin_workspace_json.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.admin_workspace_json.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.admin_workspace_json(w kiln_private.workspaces)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select jsonb_build_object(
    'id', w.id, 'name', w.name, 'ownerId', w.owner_id,
    'ownerEmail', (select a.email from kiln_private.accounts a where a.id = w.owner_id),
    'planStatus', w.plan_status, 'budgetMicros', w.plan_budget_micros,
    'usedMicros', coalesce((select b.held_micros + b.settled_micros from kiln_private.budget_periods b
                            where b.pool_id = w.id and b.period_start = kiln_private.period_start(w.plan_period_anchor, now())), 0),
    'memberCount', (select count(*) from kiln_private.workspace_members m where m.workspace_id = w.id and m.left_at is null),
    'createdAt', to_char(w.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'));
$function$;
comment on function kiln_private.admin_workspace_json(kiln_private.workspaces) is 'A workspace as the admin pages list it: owner, Team plan, spend this period, current members counted.';
