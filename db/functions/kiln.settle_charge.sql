-- functions/kiln.settle_charge.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.settle_charge.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.settle_charge(p_charge_id uuid, p_amount_micros bigint)
 RETURNS kiln_private.charges
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_charge kiln_private.charges;
  v_amount bigint;
begin
  select * into v_charge from kiln_private.charges where id = p_charge_id for update;
  if not found then
    raise exception 'charge not found' using errcode = 'KN001';
  end if;
  if v_charge.status <> 'reserved' then
    -- Idempotent: a retried or duplicated job never charges twice.
    return v_charge;
  end if;
  -- Settlement never exceeds the reservation.
  v_amount := least(greatest(coalesce(p_amount_micros, 0), 0), v_charge.reserved_micros);
  update kiln_private.budget_periods
    set held_micros = held_micros - v_charge.reserved_micros,
        settled_micros = settled_micros + v_amount
    where pool_id = v_charge.pool_id and period_start = v_charge.period_start;
  if v_charge.key_pool then
    update kiln_private.key_budget_periods
      set held_micros = held_micros - v_charge.reserved_micros,
          settled_micros = settled_micros + v_amount
      where key_id = v_charge.key_id and period_start = v_charge.period_start;
  end if;
  if v_charge.end_user_period is not null then
    update kiln_private.end_user_budget_periods
      set held_micros = held_micros - v_charge.reserved_micros,
          settled_micros = settled_micros + v_amount
      where pool_id = v_charge.pool_id and end_user = v_charge.end_user and period_start = v_charge.end_user_period;
  end if;
  update kiln_private.charges
    set status = 'settled', settled_micros = v_amount, finished_at = now()
    where id = p_charge_id
    returning * into v_charge;
  return v_charge;
end;
$function$;
comment on function kiln.settle_charge(uuid,bigint) is 'Settles a reservation at the actual cost (clamped to the reservation). The pool''s, the key''s and the end user''s held amounts become settled alike. Idempotent: settling or releasing twice changes nothing.';
