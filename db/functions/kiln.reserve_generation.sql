-- functions/kiln.reserve_generation.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.reserve_generation.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.reserve_generation(p_id uuid, p_amount_micros bigint)
 RETURNS json
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_gen kiln_private.generations;
  v_charge kiln_private.charges;
begin
  select * into v_gen from kiln_private.generations where id = p_id for update;
  if not found or v_gen.status <> 'processing' then
    return json_build_object('ok', false);
  end if;
  if v_gen.charge_id is not null then
    -- Idempotent: a retry or takeover keeps the first reservation.
    return json_build_object('ok', true, 'reserved_micros', v_gen.reserved_micros);
  end if;
  -- Raises KQ001 / KP001 when the budget cannot cover the worst case.
  v_charge := kiln.reserve_budget(v_gen.account_id, v_gen.workspace_id, v_gen.key_id, v_gen.model_id, v_gen.origin,
                                  p_amount_micros, v_gen.id, v_gen.run_id, v_gen.output_node_id, v_gen.end_user);
  if v_gen.batch_id is not null then
    -- A batch line's charge names its batch: usage and the analysts' views show batch spend apart.
    update kiln_private.charges set batch_id = v_gen.batch_id where id = v_charge.id;
  end if;
  update kiln_private.generations
    set charge_id = v_charge.id, reserved_micros = v_charge.reserved_micros, updated_at = now()
    where id = p_id;
  -- The charge carries the generation's attribution (docs/api.md, "Attribution"): its end user
  -- from kiln.reserve_budget, its metadata here.
  if v_gen.metadata is not null then
    update kiln_private.charges set metadata = v_gen.metadata where id = v_charge.id;
  end if;
  return json_build_object('ok', true, 'reserved_micros', v_charge.reserved_micros);
end;
$function$;
comment on function kiln.reserve_generation(uuid,bigint) is 'Reserves the worst-case cost of a processing generation created without a reservation (a run output, priced once its inputs are known; a batch line, whose charge gets its batch_id) on its budget pool, once (idempotent), and on its end user''s cap when it has one; the charge carries the generation''s end_user and metadata. Raises KQ001 or KP001 when the budget cannot cover it.';
