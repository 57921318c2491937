// kiln.watch_workflow_run: kiln.get_workflow_run plus whether any output can still settle.

import type { Queryable } from '../pool.ts';
import type { WorkflowRunJson } from './get_workflow_run.ts';

/** kiln.watch_workflow_run's json. */
export interface WatchedRunJson extends WorkflowRunJson {
  /** Some output can still settle (settled + abandoned < total): a failed run may still record in-flight results. */
  open: boolean;
}

export function watchWorkflowRun(sql: Queryable, accountId: string, workflowId: string, runId: string) {
  return sql<Array<{ r: WatchedRunJson | null }>>`select kiln.watch_workflow_run(${accountId}::uuid, ${workflowId}::uuid, ${runId}::uuid) as r`;
}
