-- functions/kiln.session_info.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.session_info.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.session_info(p_key_hash bytea)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'user', json_build_object('id', a.id, 'email', a.email, 'admin', a.is_admin or a.admin_by_group),
    'workspaceId', k.workspace_id,
    'workspaces', coalesce((select json_agg(json_build_object('id', w.id, 'name', w.name, 'role', m.role) order by w.name, w.id)
                            from kiln_private.workspace_members m join kiln_private.workspaces w on w.id = m.workspace_id
                            where m.account_id = a.id and m.left_at is null), '[]'),
    'expiresAt', to_char(least(k.expires_at, coalesce(k.last_used_at, k.created_at) + make_interval(secs => k.idle_seconds)) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
  from kiln_private.credentials(array[p_key_hash]) c
  join kiln_private.api_keys k on k.id = c.id and k.kind = 'session'
  join kiln_private.accounts a on a.id = k.account_id;
$function$;
comment on function kiln.session_info(bytea) is 'Who a live console session is: the user, the workspace it acts in (null = personal), the workspaces it may switch to, and when it ends. No row when the session is not live.';
