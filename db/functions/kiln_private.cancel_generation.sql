-- functions/kiln_private.cancel_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.cancel_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.cancel_generation(p_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_status text;
begin
  select status into v_status from kiln_private.generations where id = p_id;
  if not found or v_status in ('completed', 'failed') then
    return false;
  end if;
  -- Fails it with the error 'canceled' and releases its reservation (a run output also records
  -- the failure on its run); a completion that comes later finds it terminal and applies nothing.
  if not (kiln.fail_generation(p_id, 'canceled')->>'applied')::boolean then
    return false;
  end if;
  -- A queued job is dropped; a locked one keeps running but will not be retried.
  perform graphile_worker.remove_job(p_id::text);
  if v_status = 'processing' then
    -- Whichever worker runs it aborts its provider call (delivered at commit).
    perform pg_notify('kiln:cancel', p_id::text);
  end if;
  return true;
end;
$function$;
comment on function kiln_private.cancel_generation(uuid) is 'Cancels a pending or processing generation: fails it with error ''canceled'' and releases its reservation (kiln.fail_generation), drops its queued job and, when it was processing, notifies channel kiln:cancel with its id so its worker aborts the provider call. False when it had already ended. Callers lock its run first, when it has one.';
