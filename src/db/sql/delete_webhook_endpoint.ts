// kiln.delete_webhook_endpoint: deletes an endpoint of a scope with its delivery log.

import type { Queryable } from '../pool.ts';

export function deleteWebhookEndpoint(sql: Queryable, scopeId: string, id: string) {
  return sql<Array<{ ok: boolean }>>`select kiln.delete_webhook_endpoint(${scopeId}::uuid, ${id}::uuid) as ok`;
}
