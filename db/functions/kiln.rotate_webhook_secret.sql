-- functions/kiln.rotate_webhook_secret.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.rotate_webhook_secret.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.rotate_webhook_secret(p_scope_id uuid, p_id uuid, p_secret_enc bytea, p_overlap_seconds integer)
 RETURNS boolean
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  with u as (
    update kiln_private.webhook_endpoints set
      old_secret_enc = secret_enc, old_secret_until = now() + make_interval(secs => p_overlap_seconds),
      secret_enc = p_secret_enc, updated_at = now()
    where id = p_id and scope_id = p_scope_id returning 1)
  select exists (select 1 from u);
$function$;
comment on function kiln.rotate_webhook_secret(uuid,uuid,bytea,integer) is 'A new signing secret; the previous one keeps signing alongside it for p_overlap_seconds. Whether the endpoint exists.';
