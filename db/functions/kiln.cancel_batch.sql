-- functions/kiln.cancel_batch.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.cancel_batch.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.cancel_batch(p_account_id uuid, p_id uuid)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_b kiln_private.batches;
begin
  -- Only the batch row here: its lines are ended by kiln.end_batch_lines in a transaction of its
  -- own, which locks lines before the batch, as the workers' transactions do (no lock cycle).
  update kiln_private.batches set status = 'canceling', updated_at = now()
    where id = p_id and account_id = p_account_id and status = 'in_progress'
    returning * into v_b;
  if found then
    return json_build_object('outcome', 'canceled', 'batch', kiln_private.batch_body(v_b));
  end if;
  select * into v_b from kiln_private.batches where id = p_id and account_id = p_account_id;
  if not found then
    return json_build_object('outcome', 'missing');
  end if;
  return json_build_object('outcome', case when v_b.status = 'canceling' then 'canceled' else 'conflict' end, 'batch', kiln_private.batch_body(v_b));
end;
$function$;
comment on function kiln.cancel_batch(uuid,uuid) is 'POST /batches/{id}/cancel: the batch goes canceling (no line is queued or started any more); the caller then ends its lines with kiln.end_batch_lines (the worker''s sweep does it too, after a crash in between). Outcome canceled (also when already canceling), conflict (it had ended) or missing.';
