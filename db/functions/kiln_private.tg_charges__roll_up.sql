-- functions/kiln_private.tg_charges__roll_up.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_charges__roll_up.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_charges__roll_up()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  if tg_level = 'ROW' then
    -- A row inserted already ended (not the POST path, which inserts reservations).
    perform kiln_private.roll_up_charges(array[new], '{}');
  elsif tg_op = 'UPDATE' then
    -- Statement-level with transition tables: a batch of settlements is one upsert per group.
    perform kiln_private.roll_up_charges(array(select n::kiln_private.charges from new_rows n), array(select o::kiln_private.charges from old_rows o));
  elsif tg_op = 'DELETE' then
    perform kiln_private.roll_up_charges('{}', array(select o::kiln_private.charges from old_rows o));
  end if;
  return null;
end;
$function$;
comment on function kiln_private.tg_charges__roll_up() is 'Trigger on kiln_private.charges: keeps kiln_private.charge_days equal to the ended charges'' sums in the same transaction (kiln_private.roll_up_charges) — per statement for updates and deletes, per row for a row inserted already ended.';
