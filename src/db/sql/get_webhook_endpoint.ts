// kiln.get_webhook_endpoint: one endpoint of a scope (no secret), null when not the scope's.

import type { Queryable } from '../pool.ts';
import type { WebhookEndpointJson } from './create_webhook_endpoint.ts';

export function getWebhookEndpoint(sql: Queryable, scopeId: string, id: string) {
  return sql<Array<{ e: WebhookEndpointJson | null }>>`select kiln.get_webhook_endpoint(${scopeId}::uuid, ${id}::uuid) as e`;
}
