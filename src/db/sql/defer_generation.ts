// kiln.defer_generation: a transient failure — back to pending until the job's retry (lease holder only).

import type { Queryable } from '../pool.ts';

export function deferGeneration(sql: Queryable, id: string, workerId: string, jobId: string, error: string) {
  return sql<object[]>`select kiln.defer_generation(${id}::uuid, ${workerId}, ${jobId}::bigint, ${error})`;
}
