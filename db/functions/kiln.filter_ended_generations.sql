-- functions/kiln.filter_ended_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.filter_ended_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.filter_ended_generations(p_ids uuid[])
 RETURNS uuid[]
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select coalesce(array_agg(g.id), '{}') from kiln_private.generations g
  where g.id = any (p_ids) and g.status in ('completed', 'failed');
$function$;
comment on function kiln.filter_ended_generations(uuid[]) is 'Those of the given generations that have ended (completed or failed): a worker aborts the ones it still runs — the backstop for a kiln:cancel notification it missed.';
