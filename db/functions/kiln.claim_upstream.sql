-- functions/kiln.claim_upstream.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.claim_upstream.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.claim_upstream(p_model_id text, p_trial_seconds integer)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_h kiln_private.upstream_health;
begin
  select * into v_h from kiln_private.upstream_health where model_id = p_model_id;
  if not found or v_h.skipped_until is null then
    return 'use';
  end if;
  if v_h.skipped_until > now() then
    return 'skip';
  end if;
  -- The skip window is over: exactly one caller gets the trial call; the others keep skipping
  -- until it reports (or its lease runs out, when its worker died).
  update kiln_private.upstream_health
    set trial_until = now() + make_interval(secs => greatest(p_trial_seconds, 1)), updated_at = now()
    where model_id = p_model_id and skipped_until <= now() and (trial_until is null or trial_until <= now());
  return case when found then 'trial' else 'skip' end;
end;
$function$;
comment on function kiln.claim_upstream(text,integer) is 'Whether a worker may call a catalog entry''s upstream now: use (healthy), skip (skipped after repeated failures, or another worker''s trial call is in flight) or trial (this caller makes the one call that decides; its lease lasts p_trial_seconds).';
