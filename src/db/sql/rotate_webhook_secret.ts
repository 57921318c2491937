// kiln.rotate_webhook_secret: a new signing secret; the old one keeps signing for the overlap.

import type { Queryable } from '../pool.ts';

export function rotateWebhookSecret(sql: Queryable, scopeId: string, id: string, secretEnc: Buffer, overlapSeconds: number) {
  return sql<Array<{ ok: boolean }>>`select kiln.rotate_webhook_secret(${scopeId}::uuid, ${id}::uuid, ${secretEnc}::bytea, ${overlapSeconds}::int) as ok`;
}
