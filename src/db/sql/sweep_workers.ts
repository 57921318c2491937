// kiln.sweep_workers: crash recovery — unlock_dead_workers, then fail the generations no job can
// finish any more. `ended`: the generations it failed (and run outputs those failures abandoned).

import type { Queryable } from '../pool.ts';
import type { EndedGeneration } from './ended_generations.ts';

export interface SweepResult {
  unlocked?: string[] | null;
  failed_generations?: number | null;
}

export function sweepWorkers(sql: Queryable, staleSeconds: number) {
  return sql<Array<{ r: SweepResult | null; ended: EndedGeneration[] }>>`
    with c as materialized (select kiln.sweep_workers(${staleSeconds}::int) as r)
    select c.r, kiln.take_ended_generations() as ended from c`;
}
