// kiln.beat_worker: a worker's heartbeat on its lease connection; whether it still holds the lease.

import type { Queryable } from '../pool.ts';

export function beatWorker(sql: Queryable, workerId: string) {
  return sql<Array<{ held: boolean }>>`select kiln.beat_worker(${workerId}) as held`;
}
