-- functions/kiln.create_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.create_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.create_generation(p_account_id uuid, p_key_id uuid, p_workspace_id uuid, p_origin text, p_type text, p_model_id text, p_model_version bigint, p_request jsonb, p_reserve_micros bigint, p_max_attempts integer)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_r record;
begin
  select * into v_r from kiln_private.insert_generations(array[p_account_id], array[p_key_id], array[p_workspace_id], array[p_origin],
    array[p_type], array[p_model_id], array[p_model_version], array[p_request], array[p_reserve_micros], p_max_attempts);
  if v_r.error_code is not null then
    raise exception '%', v_r.error_message using errcode = v_r.error_code;
  end if;
  return v_r.id;
end;
$function$;
comment on function kiln.create_generation(uuid,uuid,uuid,text,text,text,bigint,jsonb,bigint,integer) is 'kiln_private.insert_generations for one request: checks the model, reserves the worst-case cost, inserts the generation and queues generation__run. Raises KI001, KQ001/KP001, KS001 (stale catalog price; internal).';
