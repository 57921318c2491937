-- functions/kiln.list_workflows.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_workflows.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_workflows(p_account_id uuid, p_workspace_id uuid, p_limit integer, p_offset integer)
 RETURNS json
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_scopes uuid[] := kiln_private.workflow_scopes(p_account_id, p_workspace_id);
begin
  if p_limit is null or p_limit < 1 or p_limit > 100 then
    raise exception 'limit must be an integer from 1 to 100' using errcode = 'KI001';
  end if;
  if p_offset is null or p_offset < 0 then
    raise exception 'offset must be an integer of at least 0' using errcode = 'KI001';
  end if;
  return (
    select coalesce(json_agg(json_build_object(
             'id', w.id,
             'name', w.name,
             'updated_at', to_char(w.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
             order by w.updated_at desc, w.id desc), '[]'::json)
    from (select * from kiln_private.workflows
          where scope_id = any (v_scopes) and deleted_at is null
          order by updated_at desc, id desc
          limit p_limit offset p_offset) w);
end;
$function$;
comment on function kiln.list_workflows(uuid,uuid,integer,integer) is 'The workflow summaries (id, name, updated_at) of the caller''s scope (kiln_private.workflow_scopes), deleted ones left out, most recently updated first. KI001 for a limit outside 1–100 or a negative offset.';
