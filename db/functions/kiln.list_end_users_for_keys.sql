-- functions/kiln.list_end_users_for_keys.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.list_end_users_for_keys.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.list_end_users_for_keys(p_key_hashes bytea[], p_read_rpm integer, p_froms date[], p_tos date[], p_limits integer[], p_after_useds bigint[], p_after_end_users text[])
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer, body json)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select r.*, case when r.status = 'ok' then kiln.list_end_users(r.account_id, r.workspace_id, p_froms[r.ord], p_tos[r.ord], p_limits[r.ord],
                                                                 p_after_useds[r.ord], p_after_end_users[r.ord]) end
  from kiln_private.authorize_reads(p_key_hashes, p_read_rpm) r;
$function$;
comment on function kiln.list_end_users_for_keys(bytea[],integer,date[],date[],integer[],bigint[],text[]) is 'GET /end-users for a batch in one transaction: authorizes each key (read scope, the per-key read bucket at p_read_rpm and the key''s own rpm) and, when admitted, returns its billing scope''s page of end users (kiln.list_end_users; the caller checks the range and limit first).';
