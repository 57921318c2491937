// kiln.event_traceparent: the traceparent stored with the request behind an event's subject, so a
// webhook delivery's span joins that request's trace (only asked with tracing on).

import type { Queryable } from '../pool.ts';

export function eventTraceparent(sql: Queryable, eventId: string | number) {
  return sql<Array<{ tp: string | null }>>`select kiln.event_traceparent(${String(eventId)}::bigint) as tp`;
}
