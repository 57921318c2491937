-- functions/kiln_private.generation_job_attempts.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.generation_job_attempts.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.generation_job_attempts()
 RETURNS smallint
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$ select 25::smallint $function$;
comment on function kiln_private.generation_job_attempts() is 'max_attempts of every generation__run job: a job is picked up once per execution and once per takeover after a crash (a retry or a slot wait is a new job), so the cap only has to stay above KILN_GENERATION_MAX_CRASHES (at most 20); Kiln counts attempts and crashes itself, on the generation.';
