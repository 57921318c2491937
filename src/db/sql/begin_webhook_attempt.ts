// kiln.begin_webhook_attempt: what one delivery attempt needs, or null when its job is stale.

import type { Queryable } from '../pool.ts';

export interface StoredEvent {
  id: string | number;
  type: string;
  occurredAt: string;
  data: unknown;
  /** The message body as first rendered (null until then). */
  body: string | null;
}

export interface AttemptJson {
  id: string;
  url: string;
  endpointId: string;
  /** base64 of the encrypted secret (webhooks/secrets.ts). */
  secret: string;
  /** base64 of the encrypted previous secret while it still signs. */
  oldSecret: string | null;
  event: StoredEvent;
}

export function beginWebhookAttempt(sql: Queryable, deliveryId: string, round: number, tries: number) {
  return sql<Array<{ a: AttemptJson | null }>>`select kiln.begin_webhook_attempt(${deliveryId}::uuid, ${round}::int, ${tries}::int) as a`;
}
