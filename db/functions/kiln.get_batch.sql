-- functions/kiln.get_batch.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_batch.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_batch(p_account_id uuid, p_id uuid)
 RETURNS json
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select kiln_private.batch_body(b) from kiln_private.batches b where b.id = p_id and b.account_id = p_account_id;
$function$;
comment on function kiln.get_batch(uuid,uuid) is 'A batch of the account as the API shows it (kiln_private.batch_body); null when there is none.';
