// kiln.sweep_workers: crash recovery — unlock_dead_workers, then fail the generations no job can
// finish any more.

import type { Queryable } from '../pool.ts';

export interface SweepResult {
  unlocked?: string[] | null;
  failed_generations?: number | null;
}

export function sweepWorkers(sql: Queryable, staleSeconds: number) {
  return sql<Array<{ r: SweepResult | null }>>`select kiln.sweep_workers(${staleSeconds}::int) as r`;
}
