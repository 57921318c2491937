// kiln.claim_idempotency_key: claims one Idempotency-Key in the caller's transaction, or returns
// the answer stored by an earlier request with the same key and body (KD001: another body).

import type { Queryable } from '../pool.ts';

export interface ClaimIdempotencyKeyRow {
  replayed: boolean;
  response_status: number | null;
  response_body: unknown;
}

export function claimIdempotencyKey(sql: Queryable, accountId: string, operation: string, key: string, fingerprint: Uint8Array, ttlSeconds: number) {
  return sql<ClaimIdempotencyKeyRow[]>`select * from kiln.claim_idempotency_key(${accountId}::uuid, ${operation}::text, ${key}::text,
    ${fingerprint}::bytea, ${ttlSeconds}::int)`;
}
