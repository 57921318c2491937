// kiln.retry_workflow_run: a new run of a failed run's snapshot that reuses its completed outputs.
// Returns the new run id, and (`ended`) the outputs of the failed run it canceled in flight.

import type { Queryable } from '../pool.ts';
import type { EndedGeneration } from './ended_generations.ts';

export interface RetryWorkflowRunArgs {
  accountId: string;
  keyId: string | null;
  workspaceId: string | null;
  origin: string;
  workflowId: string;
  runId: string;
  windowSeconds: number;
  maxAttempts: number;
}

export function retryWorkflowRun(sql: Queryable, a: RetryWorkflowRunArgs) {
  return sql<Array<{ id: string; ended: EndedGeneration[] }>>`
    with c as materialized (
      select kiln.retry_workflow_run(${a.accountId}::uuid, ${a.keyId}::uuid, ${a.workspaceId}::uuid, ${a.origin},
        ${a.workflowId}::uuid, ${a.runId}::uuid, ${a.windowSeconds}::int, ${a.maxAttempts}::int) as id)
    select c.id, kiln.take_ended_generations() as ended from c`;
}
