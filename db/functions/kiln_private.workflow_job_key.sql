-- functions/kiln_private.workflow_job_key.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.workflow_job_key.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.workflow_job_key(p_run_id uuid, p_output_id text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  -- Output ids are user strings: the ':o:' marker keeps them apart from the run's deadline key.
  select case when p_output_id is null then 'workflow:' || p_run_id || ':deadline'
              else 'workflow:' || p_run_id || ':o:' || p_output_id end;
$function$;
comment on function kiln_private.workflow_job_key(uuid,text) is 'graphile-worker job key of a run output (or, for a null output, of the run''s deadline check).';
