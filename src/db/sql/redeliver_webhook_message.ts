// kiln.redeliver_webhook_message: sends an endpoint's message of an event again, named by its
// webhook-id's event id (same webhook-id, same body).

import type { Queryable } from '../pool.ts';

export function redeliverWebhookMessage(sql: Queryable, scopeId: string, endpointId: string, eventId: string) {
  return sql<Array<{ ok: boolean }>>`select kiln.redeliver_webhook_message(${scopeId}::uuid, ${endpointId}::uuid, ${eventId}::bigint) as ok`;
}
