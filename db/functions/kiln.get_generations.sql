-- functions/kiln.get_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_generations(p_account_ids uuid[], p_ids uuid[], p_origins text[])
 RETURNS TABLE(ord integer, body json)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
begin
  return query
    select s.i, kiln_private.generation_body(g)
    from generate_subscripts(p_ids, 1) as s(i)
    join kiln_private.generations g
      on g.id = p_ids[s.i] and g.account_id = p_account_ids[s.i] and g.origin = any (p_origins);
end;
$function$;
comment on function kiln.get_generations(uuid[],uuid[],text[]) is 'get_generation for many (account, id) pairs in one call (the API batches concurrent polls); rows only for the visible ones.';
