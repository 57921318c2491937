// kiln.read_events: a scope's events after a (tx, id) cursor, from ended transactions only, in
// (tx, id) order.

import type { Queryable } from '../pool.ts';

export interface EventRow {
  tx: string;
  id: string;
  type: string;
  occurred_at: string;
  data: unknown;
  body: string | null;
}

export function readEvents(sql: Queryable, scopeId: string, after: { tx: string; id: string } | null, since: Date | null, limit: number) {
  return sql<EventRow[]>`select tx, id::text as id, type, occurred_at, data, body from kiln.read_events(${scopeId}::uuid,
    ${after?.tx ?? null}::xid8, ${after?.id ?? null}::bigint, ${since}::timestamptz, ${limit}::int)`;
}
