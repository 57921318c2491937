// kiln.retire_worker: forgets a worker that shut down cleanly (and lets go of its lease).

import type { Queryable } from '../pool.ts';

export function retireWorker(sql: Queryable, workerId: string) {
  return sql<object[]>`select kiln.retire_worker(${workerId})`;
}
