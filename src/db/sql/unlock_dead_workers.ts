// kiln.unlock_dead_workers: unlocks the jobs of workers whose lease is gone; returns their ids.

import type { Queryable } from '../pool.ts';

export function unlockDeadWorkers(sql: Queryable, staleSeconds: number) {
  return sql<Array<{ dead: string[] | null }>>`select kiln.unlock_dead_workers(${staleSeconds}::int) as dead`;
}
