-- functions/kiln.create_webhook_endpoint.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.create_webhook_endpoint.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.create_webhook_endpoint(p_account_id uuid, p_workspace_id uuid, p_url text, p_events text[], p_description text, p_secret_enc bytea)
 RETURNS json
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  insert into kiln_private.webhook_endpoints (scope_id, account_id, workspace_id, url, events, description, secret_enc)
    values (coalesce(p_workspace_id, p_account_id), p_account_id, p_workspace_id, p_url, p_events, p_description, p_secret_enc)
    returning kiln_private.webhook_endpoint_json(webhook_endpoints);
$function$;
comment on function kiln.create_webhook_endpoint(uuid,uuid,text,text[],text,bytea) is 'Creates an endpoint in the scope of the creating key (the workspace when bound, else the account). Returns it (no secret).';
