// kiln.expire_workflow_run: the run-window check — past the deadline, outputs not started fail the
// run, and outputs no job can finish any more are failed. `ended`: the generations it ended.

import type { Queryable } from '../pool.ts';
import type { EndedGeneration } from './ended_generations.ts';

export function expireWorkflowRun(sql: Queryable, runId: string, staleSeconds: number) {
  return sql<Array<{ r: unknown; ended: EndedGeneration[] }>>`
    with c as materialized (select kiln.expire_workflow_run(${runId}::uuid, ${staleSeconds}::int) as r)
    select c.r, kiln.take_ended_generations() as ended from c`;
}
