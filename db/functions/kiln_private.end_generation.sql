-- functions/kiln_private.end_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.end_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.end_generation(p_id uuid, p_error text)
 RETURNS boolean
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
begin
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if not found or v_gen.status in ('completed', 'failed') then
    return false;
  end if;
  if v_gen.charge_id is not null then
    perform kiln.release_charge(v_gen.charge_id);
  end if;
  update kiln_private.generations
    set status = 'failed',
        error = left(coalesce(nullif(p_error, ''), 'generation failed'), 1000),
        waiting = false,
        finished_at = now(),
        updated_at = now()
    where id = p_id;
  -- One JSON object per line (json_build_object escapes newlines inside strings).
  perform set_config('kiln.ended_generations',
    coalesce(current_setting('kiln.ended_generations', true), '') ||
      json_build_object('type', v_gen.type, 'model_id', v_gen.model_id,
                        'status', case when p_error = 'canceled' then 'canceled' else 'failed' end)::text || E'\n',
    true);
  return true;
end;
$function$;
comment on function kiln_private.end_generation(uuid,text) is 'Fails a generation and releases its reservation, nothing else (callers handle its run and slots); notes it for kiln.take_ended_generations. False when already settled.';
