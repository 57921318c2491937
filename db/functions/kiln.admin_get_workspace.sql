-- functions/kiln.admin_get_workspace.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.admin_get_workspace.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.admin_get_workspace(p_workspace_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select (kiln_private.admin_workspace_json(w) || jsonb_build_object(
    'members', coalesce((select jsonb_agg(jsonb_build_object(
                           'accountId', m.account_id, 'email', a.email, 'role', m.role,
                           'joinedAt', to_char(m.joined_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                           'leftAt', to_char(m.left_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
                         order by m.left_at is not null, m.role = 'member', a.email)
                         from kiln_private.workspace_members m join kiln_private.accounts a on a.id = m.account_id
                         where m.workspace_id = w.id), '[]')))::json
  from kiln_private.workspaces w where w.id = p_workspace_id;
$function$;
comment on function kiln.admin_get_workspace(uuid) is 'GET /admin/workspaces/{id}: the workspace and its members (former ones too, with leftAt). No row for an unknown workspace.';
