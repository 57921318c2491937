-- functions/kiln_private.tg_end_user_budgets__audit.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_end_user_budgets__audit.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_end_user_budgets__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if tg_op = 'DELETE' then
    perform kiln_private.audit(old.pool_id, 'end_user.budget_removed', 'end_user', old.end_user,
      jsonb_build_object('endUser', old.end_user,
        'previous', jsonb_build_object('budgetMicros', old.budget_micros, 'period', old.period, 'rpm', old.rpm)));
  elsif tg_op = 'INSERT' then
    perform kiln_private.audit(new.pool_id, 'end_user.budget_set', 'end_user', new.end_user,
      jsonb_build_object('endUser', new.end_user, 'budgetMicros', new.budget_micros, 'period', new.period, 'rpm', new.rpm,
        'previous', null));
  elsif (old.budget_micros, old.period, old.rpm) is distinct from (new.budget_micros, new.period, new.rpm) then
    perform kiln_private.audit(new.pool_id, 'end_user.budget_set', 'end_user', new.end_user,
      jsonb_build_object('endUser', new.end_user, 'budgetMicros', new.budget_micros, 'period', new.period, 'rpm', new.rpm,
        'previous', jsonb_build_object('budgetMicros', old.budget_micros, 'period', old.period, 'rpm', old.rpm)));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_end_user_budgets__audit() is 'Trigger: end_user.budget_set (the new settings and the previous ones, null for a new cap) and end_user.budget_removed in the audit log of the cap''s billing scope.';
