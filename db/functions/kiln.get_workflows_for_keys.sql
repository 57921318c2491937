-- functions/kiln.get_workflows_for_keys.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.get_workflows_for_keys.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.get_workflows_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_ids uuid[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select r.*, case when r.status = 'ok' then (select to_json(w) from kiln.get_workflow(p_ids[r.ord], r.account_id, r.workspace_id) w) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.get_workflows_for_keys(bytea[],integer,uuid[]) is 'GET /workflows/{id} for a batch in one transaction: authorizes each key (read scope, the per-key read bucket and the key''s own rpm) and, when admitted, returns that workflow of the key''s scope as its row in JSON (kiln.get_workflow; null body when there is none).';
