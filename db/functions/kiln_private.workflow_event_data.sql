-- functions/kiln_private.workflow_event_data.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.workflow_event_data.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.workflow_event_data(w kiln_private.workflows)
 RETURNS json
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select json_build_object(
    'id', w.id, 'name', w.name, 'version', w.version,
    'createdAt', to_char(w.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'updatedAt', to_char(w.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'deletedAt', to_char(w.deleted_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
$function$;
comment on function kiln_private.workflow_event_data(kiln_private.workflows) is 'The data of a workflow.saved / workflow.deleted event: the workflow without its graph (id, name, version, createdAt, updatedAt, deletedAt).';
