-- functions/kiln_private.visible_key.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.visible_key.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.visible_key(p_account_id uuid, p_workspace_id uuid, p_key_id uuid)
 RETURNS kiln_private.api_keys
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  -- Personal scope: the caller's own personal keys. A workspace: its keys; all of them for an
  -- owner or admin, a member's own otherwise. Sessions are never keys.
  select k.* from kiln_private.api_keys k
  where k.id = p_key_id and k.kind = 'key'
    and case when p_workspace_id is null then k.account_id = p_account_id and k.workspace_id is null
             else k.workspace_id = p_workspace_id and (k.account_id = p_account_id or exists (
               select 1 from kiln_private.workspace_members m
               where m.workspace_id = p_workspace_id and m.account_id = p_account_id and m.left_at is null
                 and m.role in ('owner', 'admin'))) end;
$function$;
comment on function kiln_private.visible_key(uuid,uuid,uuid) is 'The key with this id when the caller''s billing scope may manage it (else no row: a 404, never a hint).';
