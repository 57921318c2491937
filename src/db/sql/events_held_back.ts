// kiln.events_held_back: whether committed events after the cursor are held back by an older open transaction.

import type { Queryable } from '../pool.ts';

export function eventsHeldBack(sql: Queryable, scopeId: string, after: { tx: string; id: string } | null) {
  return sql<Array<{ held: boolean }>>`select kiln.events_held_back(${scopeId}::uuid, ${after?.tx ?? null}::xid8, ${after?.id ?? null}::bigint) as held`;
}
