-- functions/kiln.poll_generations.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.poll_generations.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.poll_generations(p_key_hashes bytea[], p_read_rpm integer, p_ids uuid[], p_origin text)
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select r.*, case when r.status = 'ok' then (
           select kiln_private.generation_body(g) from kiln_private.generations g
           where g.id = p_ids[r.ord] and g.account_id = r.account_id and g.origin = p_origin) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.poll_generations(bytea[],integer,uuid[],text) is 'GET /generations/{id} for a batch in one transaction: authorizes each key (read scope, the per-key read bucket at p_read_rpm and the key''s own rpm) and, when admitted, returns that generation of the key''s account created through p_origin (body null when there is none).';
