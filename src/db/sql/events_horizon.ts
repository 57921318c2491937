// kiln.events_horizon: where a fresh GET /events stream starts (the oldest open transaction).

import type { Queryable } from '../pool.ts';

export function eventsHorizon(sql: Queryable) {
  return sql<Array<{ tx: string }>>`select kiln.events_horizon() as tx`;
}
