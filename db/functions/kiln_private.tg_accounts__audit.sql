-- functions/kiln_private.tg_accounts__audit.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_accounts__audit.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_accounts__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_changes jsonb := '{}';
begin
  if tg_op = 'INSERT' then
    perform kiln_private.audit(new.id, 'account.created', 'account', new.id::text,
      jsonb_build_object('email', new.email, 'tier', new.tier, 'budgetMicros', new.budget_micros));
    return null;
  end if;
  if old.tier is distinct from new.tier then
    v_changes := v_changes || jsonb_build_object('tier', jsonb_build_object('from', old.tier, 'to', new.tier));
  end if;
  if old.budget_micros is distinct from new.budget_micros then
    v_changes := v_changes || jsonb_build_object('budgetMicros', jsonb_build_object('from', old.budget_micros, 'to', new.budget_micros));
  end if;
  if old.parallel_slots is distinct from new.parallel_slots then
    v_changes := v_changes || jsonb_build_object('parallelSlots', jsonb_build_object('from', old.parallel_slots, 'to', new.parallel_slots));
  end if;
  if old.is_admin is distinct from new.is_admin then
    v_changes := v_changes || jsonb_build_object('admin', jsonb_build_object('from', old.is_admin, 'to', new.is_admin));
  end if;
  if old.admin_by_group is distinct from new.admin_by_group then
    v_changes := v_changes || jsonb_build_object('adminByGroup', jsonb_build_object('from', old.admin_by_group, 'to', new.admin_by_group));
  end if;
  if old.email is distinct from new.email then
    v_changes := v_changes || jsonb_build_object('email', jsonb_build_object('from', old.email, 'to', new.email));
  end if;
  if v_changes <> '{}' then
    perform kiln_private.audit(new.id, 'account.updated', 'account', new.id::text, v_changes);
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_accounts__audit() is 'Trigger: account.created and account.updated (tier, budget, slots, admin, email: each change from → to) in the audit log.';
