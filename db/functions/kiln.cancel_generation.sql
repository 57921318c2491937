-- functions/kiln.cancel_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.cancel_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.cancel_generation(p_account_id uuid, p_id uuid, p_origins text[])
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
begin
  select * into v_gen from kiln_private.generations
    where id = p_id and account_id = p_account_id and origin = any (p_origins);
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  if v_gen.run_id is not null then
    -- The lock order of every settlement: the run, then the generation.
    perform 1 from kiln_private.workflow_runs where id = v_gen.run_id for update;
  end if;
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if v_gen.status in ('completed', 'failed') then
    return json_build_object('outcome', 'conflict', 'body', kiln_private.generation_body(v_gen));
  end if;
  perform kiln_private.cancel_generation(p_id);
  select * into v_gen from kiln_private.generations where id = p_id;
  return json_build_object('outcome', 'canceled', 'body', kiln_private.generation_body(v_gen), 'model_id', v_gen.model_id);
end;
$function$;
comment on function kiln.cancel_generation(uuid,uuid,text[]) is 'Cancels a generation of the account created through one of p_origins: outcome canceled (failed with error ''canceled'', reservation released, its worker told to abort; with its model_id, for the canceling process''s metrics), conflict (already completed or failed) or missing; body = the generation as the API reads it. Never raises for these outcomes (safe in a batch).';
