-- functions/kiln_private.authorize_reads.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln_private.authorize_reads.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln_private.authorize_reads(p_key_hashes bytea[], p_read_rpm integer)
 RETURNS TABLE(ord integer, status text, key_id uuid, account_id uuid, workspace_id uuid, tier text, scopes text[], retry_after integer)
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
  select * from kiln_private.authorize_keys(p_key_hashes, 'read', p_read_rpm);
$function$;
comment on function kiln_private.authorize_reads(bytea[],integer) is 'kiln.authorize_requests for a batch of reads: read scope, the per-key read bucket at p_read_rpm and each key''s own rpm.';
