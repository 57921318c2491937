// kiln.consume_account_rate_limit: one request against an account's bucket (callers that are not
// API keys: MCP). `retry` is the retry-after in seconds, 0 when admitted.

import type { Queryable } from '../pool.ts';

export function consumeAccountRateLimit(sql: Queryable, accountId: string, bucket: string, rpm: number) {
  return sql<Array<{ retry: number }>>`select kiln.consume_account_rate_limit(${accountId}::uuid, ${bucket}, ${rpm}::int) as retry`;
}
