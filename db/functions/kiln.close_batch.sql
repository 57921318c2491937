-- functions/kiln.close_batch.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.close_batch.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.close_batch(p_batch_id uuid, p_account_id uuid)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_b kiln_private.batches;
begin
  select * into v_b from kiln_private.batches where id = p_batch_id and account_id = p_account_id for update;
  if not found or v_b.status <> 'in_progress' or v_b.next_line <> 0 then
    raise exception 'not a batch being created' using errcode = '22023';
  end if;
  -- Every line is in: 1 to total, each once (the unique index on batch_id, batch_line).
  if not exists (select 1 from kiln_private.generations g where g.batch_id = p_batch_id and g.batch_line = v_b.total)
     or exists (select 1 from kiln_private.generations g where g.batch_id = p_batch_id and g.batch_line = v_b.total + 1) then
    raise exception 'the batch does not have its % lines', v_b.total using errcode = '22023';
  end if;
  perform kiln_private.dispatch_batches(least(v_b.total, 1000));
  select * into v_b from kiln_private.batches where id = p_batch_id;
  return json_build_object('outcome', 'created', 'batch', kiln_private.batch_body(v_b));
end;
$function$;
comment on function kiln.close_batch(uuid,uuid) is 'POST /batches, last in the transaction kiln.open_batch began: checks that every line was added (kiln.add_batch_lines) and queues the first lines (kiln_private.dispatch_batches); returns the batch (outcome created).';
