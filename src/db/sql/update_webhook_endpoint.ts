// kiln.update_webhook_endpoint: applies a PATCH to an endpoint of a scope (null when not the scope's).

import type { Queryable } from '../pool.ts';
import type { WebhookEndpointJson } from './create_webhook_endpoint.ts';

export interface WebhookPatch {
  url?: string;
  events?: string[] | null;
  description?: string | null;
  enabled?: boolean;
}

export function updateWebhookEndpoint(sql: Queryable, scopeId: string, id: string, patch: WebhookPatch) {
  return sql<Array<{ e: WebhookEndpointJson | null }>>`select kiln.update_webhook_endpoint(${scopeId}::uuid, ${id}::uuid, ${JSON.stringify(patch)}::text::jsonb) as e`;
}
