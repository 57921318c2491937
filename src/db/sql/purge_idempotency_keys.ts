// kiln.purge_idempotency_keys: deletes up to `limit` expired Idempotency-Key records.

import type { Queryable } from '../pool.ts';

export function purgeIdempotencyKeys(sql: Queryable, limit: number) {
  return sql<Array<{ n: number }>>`select kiln.purge_idempotency_keys(${limit}::int) as n`;
}
