-- functions/kiln.authorize_request.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.authorize_request.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.authorize_request(p_key_hash bytea, p_scope text, p_bucket text, p_bucket_rpm integer)
 RETURNS kiln.request_auth
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  select row(r.status, r.key_id, r.account_id, r.workspace_id, r.tier, r.scopes, r.retry_after)::kiln.request_auth
  from kiln.authorize_requests(array[p_key_hash], array[p_scope], array[p_bucket], array[p_bucket_rpm], array[false]) r;
$function$;
comment on function kiln.authorize_request(bytea,text,text,integer) is 'Authenticates an API key by its SHA-256 hash, checks the scope, then applies the key''s custom rpm bucket and the endpoint bucket. Missing, revoked and unknown keys all give status unauthorized.';
