-- functions/kiln.release_upstream_trial.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.release_upstream_trial.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.release_upstream_trial(p_model_id text)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  update kiln_private.upstream_health set trial_until = null, updated_at = now()
  where model_id = p_model_id and trial_until is not null;
$function$;
comment on function kiln.release_upstream_trial(text) is 'Gives back the trial lease of a catalog entry''s upstream when the trial call ended without telling whether the upstream works (canceled, shut down, an input error): the next claimer gets the trial.';
