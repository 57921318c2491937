// kiln.send_webhook_test: a webhook.test event delivered to one endpoint.

import type { Queryable } from '../pool.ts';

export function sendWebhookTest(sql: Queryable, scopeId: string, endpointId: string) {
  return sql<Array<{ ok: boolean }>>`select kiln.send_webhook_test(${scopeId}::uuid, ${endpointId}::uuid) as ok`;
}
