// kiln.expire_workflow_run: the run-window check — past the deadline, outputs not started fail the
// run, and outputs no job can finish any more are failed.

import type { Queryable } from '../pool.ts';

export function expireWorkflowRun(sql: Queryable, runId: string, staleSeconds: number) {
  return sql<Array<{ r: unknown }>>`select kiln.expire_workflow_run(${runId}::uuid, ${staleSeconds}::int) as r`;
}
