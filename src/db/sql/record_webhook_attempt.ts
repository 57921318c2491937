// kiln.record_webhook_attempt: logs an attempt and moves its delivery on (delivered, next try, failed).

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';

export interface AttemptOutcome {
  statusCode: number | null;
  errorClass: 'timeout' | 'refused' | 'tls' | 'redirect' | 'status' | null;
  error: string | null;
  durationMs: number;
  retryAfterSeconds: number | null;
}

export function recordWebhookAttempt(sql: Queryable, deliveryId: string, round: number, tries: number, o: AttemptOutcome, schedule: number[], disableAfterSeconds: number) {
  return sql<Array<{ r: { status: string; disabled?: boolean; delaySeconds?: number } }>>`select kiln.record_webhook_attempt(${deliveryId}::uuid, ${round}::int, ${tries}::int,
    ${o.statusCode}::int, ${o.errorClass}::text, ${o.error}::text, ${Math.round(o.durationMs)}::int, ${o.retryAfterSeconds}::int,
    ${pgArray(sql, schedule, ARRAY_OID.int4)}, ${disableAfterSeconds}::int) as r`;
}
