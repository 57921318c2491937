// kiln.list_webhook_endpoints: every endpoint of a scope (no secrets).

import type { Queryable } from '../pool.ts';
import type { WebhookEndpointJson } from './create_webhook_endpoint.ts';

export function listWebhookEndpoints(sql: Queryable, scopeId: string) {
  return sql<Array<{ e: WebhookEndpointJson[] }>>`select kiln.list_webhook_endpoints(${scopeId}::uuid) as e`;
}
