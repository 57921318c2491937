-- functions/kiln.list_keys.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_keys.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_keys(p_account_id uuid, p_workspace_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object('data', coalesce(json_agg(kiln_private.key_json(k, kiln_private.key_used(k)) order by k.created_at desc, k.id), '[]'))
  from kiln_private.api_keys k
  where k.kind = 'key'
    and case when p_workspace_id is null then k.account_id = p_account_id and k.workspace_id is null
             else k.workspace_id = p_workspace_id and (k.account_id = p_account_id or exists (
               select 1 from kiln_private.workspace_members m
               where m.workspace_id = p_workspace_id and m.account_id = p_account_id and m.left_at is null
                 and m.role in ('owner', 'admin'))) end;
$function$;
comment on function kiln.list_keys(uuid,uuid) is 'GET /keys: the keys of the caller''s billing scope (kiln_private.visible_key''s rule), newest first, revoked ones included.';
