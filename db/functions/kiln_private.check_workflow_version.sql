-- functions/kiln_private.check_workflow_version.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.check_workflow_version.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.check_workflow_version(p_version bigint, p_if_versions bigint[])
 RETURNS void
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if p_if_versions is not null and not (p_version = any (p_if_versions)) then
    raise exception 'the workflow has changed since that version: it is now version %; read it again and reapply your change, or save without If-Match to overwrite it', p_version
      using errcode = 'KV001';
  end if;
end;
$function$;
comment on function kiln_private.check_workflow_version(bigint,bigint[]) is 'If-Match: KV001 unless the workflow''s version is one of p_if_versions (null = no condition, e.g. "*" or no header).';
