-- functions/kiln.admin_list_workspaces.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.admin_list_workspaces.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.admin_list_workspaces(p_limit integer, p_after uuid, p_q text)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  with page as (
    select w from kiln_private.workspaces w
    where (p_after is null or w.id < p_after)
      and (p_q is null or strpos(lower(w.name), lower(p_q)) > 0)
    order by w.id desc
    limit p_limit + 1)
  select json_build_object(
    'data', coalesce((select json_agg(kiln_private.admin_workspace_json(p.w) order by (p.w).id desc)
                      from (select * from page order by (w).id desc limit p_limit) p), '[]'),
    'nextCursor', case when (select count(*) from page) > p_limit
                       then (select (w).id from page order by (w).id desc offset p_limit - 1 limit 1) end);
$function$;
comment on function kiln.admin_list_workspaces(integer,uuid,text) is 'GET /admin/workspaces: a page of workspaces by id (newest first for uuid v7 ids; any stable order otherwise), optionally whose name contains p_q.';
