// kiln.start_generation: moves a generation to processing for a worker's job, respecting the
// account's parallel slots (and, for a run output, its run). `outcome` 'run' carries what to run;
// a takeover from a dead worker counts a crash, not an attempt. `ended`: the generations the call
// ended (this one failed as it starts; a finished run's output abandoned; a run's window expired).

import type { Queryable } from '../pool.ts';
import type { EndedGeneration } from './ended_generations.ts';

export interface StartGenerationArgs {
  id: string;
  workerId: string;
  jobId: string;
  staleSeconds: number;
  waitMs: number;
  jobMaxAttempts: number;
  /** Takeovers from dead workers in a row after which the generation fails (KILN_GENERATION_MAX_CRASHES). */
  maxCrashes: number;
}

export function startGeneration(sql: Queryable, a: StartGenerationArgs) {
  return sql<Array<{ s: { outcome: string }; ended: EndedGeneration[] }>>`
    with c as materialized (
      select kiln.start_generation(${a.id}::uuid, ${a.workerId}, ${a.jobId}::bigint, ${a.staleSeconds}::int,
                                   ${a.waitMs}::int, ${a.jobMaxAttempts}::int, ${a.maxCrashes}::int) as s)
    select c.s, kiln.take_ended_generations() as ended from c`;
}
