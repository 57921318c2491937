// kiln.redeliver_webhook: sends a delivery's message again (same webhook-id, same body).

import type { Queryable } from '../pool.ts';

export function redeliverWebhook(sql: Queryable, scopeId: string, endpointId: string, deliveryId: string) {
  return sql<Array<{ ok: boolean }>>`select kiln.redeliver_webhook(${scopeId}::uuid, ${endpointId}::uuid, ${deliveryId}::uuid) as ok`;
}
