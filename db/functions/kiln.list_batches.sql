-- functions/kiln.list_batches.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_batches.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_batches(p_account_id uuid, p_before_created timestamp with time zone, p_before_id uuid, p_limit integer)
 RETURNS TABLE(at text, id uuid, body json)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select (extract(epoch from b.created_at) * 1000000)::bigint::text, b.id, kiln_private.batch_body(b)
  from kiln_private.batches b
  where b.account_id = p_account_id
    and (p_before_created is null or (b.created_at, b.id) < (p_before_created, p_before_id))
  order by b.created_at desc, b.id desc
  limit least(greatest(p_limit, 1), 101);
$function$;
comment on function kiln.list_batches(uuid,timestamp with time zone,uuid,integer) is 'The account''s batches, newest first, a keyset page after (p_before_created, p_before_id); `at` is created_at in epoch microseconds (the next cursor).';
