// kiln.register_worker: takes the lease (a session-level advisory lock on this connection) and
// registers the worker; returns the worker id work is leased to.

import type { Queryable } from '../pool.ts';

export function registerWorker(sql: Queryable, hostname: string, pid: number) {
  return sql<Array<{ id: string }>>`select kiln.register_worker(${hostname}, ${pid}::int) as id`;
}
