// kiln.defer_generation: a transient failure — back to pending, with a new job for the retry (lease
// holder only). `counted` false: the worker shut down or lost its lease, which is not an attempt.

import type { Queryable } from '../pool.ts';

export function deferGeneration(sql: Queryable, id: string, workerId: string, jobId: string, error: string, counted: boolean) {
  return sql<object[]>`select kiln.defer_generation(${id}::uuid, ${workerId}, ${jobId}::bigint, ${error}, ${counted}::boolean)`;
}
