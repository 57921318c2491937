-- functions/kiln.release_charge.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.release_charge.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.release_charge(p_charge_id uuid)
 RETURNS kiln_private.charges
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_charge kiln_private.charges;
begin
  select * into v_charge from kiln_private.charges where id = p_charge_id for update;
  if not found then
    raise exception 'charge not found' using errcode = 'KN001';
  end if;
  if v_charge.status <> 'reserved' then
    return v_charge;
  end if;
  update kiln_private.budget_periods
    set held_micros = held_micros - v_charge.reserved_micros
    where pool_id = v_charge.pool_id and period_start = v_charge.period_start;
  if v_charge.key_pool then
    update kiln_private.key_budget_periods
      set held_micros = held_micros - v_charge.reserved_micros
      where key_id = v_charge.key_id and period_start = v_charge.period_start;
  end if;
  if v_charge.end_user_period is not null then
    update kiln_private.end_user_budget_periods
      set held_micros = held_micros - v_charge.reserved_micros
      where pool_id = v_charge.pool_id and end_user = v_charge.end_user and period_start = v_charge.end_user_period;
  end if;
  update kiln_private.charges
    set status = 'released', finished_at = now()
    where id = p_charge_id
    returning * into v_charge;
  return v_charge;
end;
$function$;
comment on function kiln.release_charge(uuid) is 'Releases a reservation without charging (failed output), on the pool, the key''s budget and the end user''s cap alike. Idempotent; a settled charge stays settled.';
