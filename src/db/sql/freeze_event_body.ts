// kiln.freeze_event_body: stores an event's rendered body unless one is stored; returns the stored one.

import type { Queryable } from '../pool.ts';

export function freezeEventBody(sql: Queryable, eventId: string | number, body: string) {
  return sql<Array<{ body: string }>>`select kiln.freeze_event_body(${String(eventId)}::bigint, ${body}::text) as body`;
}
