// kiln.read_events: a scope's events after a (tx, id) cursor, from ended transactions only, in
// (tx, id) order; with kiln.events_held_back, in the same statement, whether committed events
// after the cursor are held back by an older open transaction. One statement is one snapshot: as
// two, the transaction holding events back could end between them, so that the read left the
// events out and the check then found none held, and the stream waited for a notice that had
// already come.

import type { Queryable } from '../pool.ts';

export interface EventRow {
  tx: string;
  id: string;
  type: string;
  occurred_at: string;
  data: unknown;
  body: string | null;
}

export async function readEvents(sql: Queryable, scopeId: string, after: { tx: string; id: string } | null, since: Date | null, limit: number): Promise<{ rows: EventRow[]; held: boolean }> {
  const rows = await sql<Array<EventRow & { held: boolean }>>`select h.held, e.tx, e.id::text as id, e.type, e.occurred_at, e.data, e.body
    from kiln.events_held_back(${scopeId}::uuid, ${after?.tx ?? null}::xid8, ${after?.id ?? null}::bigint) as h(held)
    left join lateral kiln.read_events(${scopeId}::uuid, ${after?.tx ?? null}::xid8, ${after?.id ?? null}::bigint, ${since}::timestamptz, ${limit}::int) e on true
    order by e.tx::xid8, e.id`;
  const held = rows[0]?.held ?? false;
  return { rows: rows[0]?.id == null ? [] : rows.map(({ held: _, ...r }) => r), held };
}
