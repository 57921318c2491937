// kiln.recover_webhook_deliveries: sends again every delivery of an endpoint that failed since a time.

import type { Queryable } from '../pool.ts';

export function recoverWebhookDeliveries(sql: Queryable, scopeId: string, endpointId: string, since: string) {
  return sql<Array<{ n: number | null }>>`select kiln.recover_webhook_deliveries(${scopeId}::uuid, ${endpointId}::uuid, ${since}::timestamptz) as n`;
}
