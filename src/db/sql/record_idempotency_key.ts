// kiln.record_idempotency_key: stores the answer of a request whose key this transaction claimed.

import type postgres from 'postgres';
import type { Queryable } from '../pool.ts';

export function recordIdempotencyKey(sql: Queryable, accountId: string, operation: string, key: string, status: number, body: unknown) {
  return sql`select kiln.record_idempotency_key(${accountId}::uuid, ${operation}::text, ${key}::text, ${status}::int,
    ${sql.json(body as postgres.JSONValue)}::jsonb)`;
}
