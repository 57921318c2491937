// kiln.list_webhook_deliveries: a page of an endpoint's deliveries, newest first.

import type { Queryable } from '../pool.ts';

export interface WebhookDeliveryJson {
  id: string;
  /** The outbox event's id (its message's webhook-id derives from it: events/ids.ts). */
  eventId: string;
  event: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
  nextAttemptAt: string | null;
}

export function listWebhookDeliveries(sql: Queryable, scopeId: string, endpointId: string, limit: number, before: { at: string; id: string } | null) {
  return sql<Array<{ d: WebhookDeliveryJson[] | null }>>`select kiln.list_webhook_deliveries(${scopeId}::uuid, ${endpointId}::uuid, ${limit}::int,
    ${before?.at ?? null}::timestamptz, ${before?.id ?? null}::uuid) as d`;
}
