-- functions/kiln.batch_results.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.batch_results.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.batch_results(p_account_id uuid, p_id uuid, p_after_line integer, p_limit integer)
 RETURNS TABLE(line integer, custom_id text, body json)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select g.batch_line, g.custom_id, kiln_private.generation_body(g)
  from kiln_private.batches b
  join kiln_private.generations g on g.batch_id = b.id
  where b.id = p_id and b.account_id = p_account_id
    -- A range of lines, not a LIMIT: it reads at most p_limit rows whatever the statistics say
    -- (with those of a batch just made, a LIMIT was planned as a sort of every line left).
    and g.batch_line > p_after_line and g.batch_line <= p_after_line + least(greatest(p_limit, 1), 5000)
    and g.status in ('completed', 'failed')
  order by g.batch_line;
$function$;
comment on function kiln.batch_results(uuid,uuid,integer,integer) is 'GET /batches/{id}/results: the ended lines of a batch of the account among lines p_after_line + 1 … p_after_line + p_limit (at most 5000 lines; those not ended are left out), in line order, with their custom_id and body (kiln_private.generation_body).';
