-- functions/kiln_private.tg_generations__tags.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.tg_generations__tags.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.tg_generations__tags()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  -- One row per metadata pair of the generations just inserted, set-based (metadata never
  -- changes after creation): GET /generations?metadata[k]=v reads them in keyset order.
  insert into kiln_private.generation_tags (generation_id, account_id, pool_id, origin, mkey, mvalue, created_at)
  select n.id, n.account_id, coalesce(n.workspace_id, n.account_id), n.origin, m.key, m.value, n.created_at
  from new_rows n cross join lateral jsonb_each_text(n.metadata) m
  where n.metadata is not null;
  return null;
end;
$function$;
comment on function kiln_private.tg_generations__tags() is 'Trigger (after insert, per statement): writes kiln_private.generation_tags, one row per metadata pair of each generation inserted.';
