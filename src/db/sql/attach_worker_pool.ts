// kiln.attach_worker_pool: records the graphile-worker pool id (what jobs are locked_by) of a worker.

import type { Queryable } from '../pool.ts';

export function attachWorkerPool(sql: Queryable, workerId: string, poolId: string) {
  return sql<object[]>`select kiln.attach_worker_pool(${workerId}, ${poolId})`;
}
