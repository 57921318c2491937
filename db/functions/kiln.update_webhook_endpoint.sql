-- functions/kiln.update_webhook_endpoint.sql: the current definition. Edit it here, and ship the change with
-- `--! include functions/kiln.update_webhook_endpoint.sql` in db/migrations/current/ (docs/development.md). Checked by test/db.definitions.test.ts.

CREATE OR REPLACE FUNCTION kiln.update_webhook_endpoint(p_scope_id uuid, p_id uuid, p_patch jsonb)
 RETURNS json
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  update kiln_private.webhook_endpoints e set
    url = case when p_patch ? 'url' then p_patch->>'url' else e.url end,
    events = case when not p_patch ? 'events' then e.events
                  when jsonb_typeof(p_patch->'events') = 'null' then null
                  else array(select jsonb_array_elements_text(p_patch->'events')) end,
    description = case when p_patch ? 'description' then p_patch->>'description' else e.description end,
    enabled = case when p_patch ? 'enabled' then (p_patch->>'enabled')::boolean else e.enabled end,
    -- Enabling again clears the reason and the failing streak.
    disabled_reason = case when (p_patch->>'enabled')::boolean then null else e.disabled_reason end,
    failing_since = case when (p_patch->>'enabled')::boolean then null else e.failing_since end,
    updated_at = now()
  where e.id = p_id and e.scope_id = p_scope_id
  returning kiln_private.webhook_endpoint_json(e);
$function$;
comment on function kiln.update_webhook_endpoint(uuid,uuid,jsonb) is 'Applies a PATCH (url, events — null = all —, description, enabled) to an endpoint of the scope; null when absent.';
