// kiln.purge_events: deletes up to `limit` events older than `ageSeconds` with their webhook
// deliveries and attempts (an event with a pending delivery stays); how many events.

import type { Queryable } from '../pool.ts';

export function purgeEvents(sql: Queryable, ageSeconds: number, limit: number) {
  return sql<Array<{ n: number }>>`select kiln.purge_events(${ageSeconds}::int, ${limit}::int) as n`;
}
