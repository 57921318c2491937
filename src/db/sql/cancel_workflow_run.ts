// kiln.cancel_workflow_run: cancels a pending or running run of an account's workflow.

import type { Queryable } from '../pool.ts';
import type { SettledOutput } from './cancel_workflow_runs_for_keys.ts';
import type { WorkflowRunJson } from './get_workflow_run.ts';

export interface CancelWorkflowRunJson {
  outcome: 'canceled' | 'conflict' | 'missing';
  run?: WorkflowRunJson | null;
  /** The generations the cancel ended (migration 000057). */
  settled?: SettledOutput[] | null;
}

export function cancelWorkflowRun(sql: Queryable, accountId: string, workflowId: string, runId: string) {
  return sql<Array<{ c: CancelWorkflowRunJson }>>`select kiln.cancel_workflow_run(${accountId}::uuid, ${workflowId}::uuid, ${runId}::uuid) as c`;
}
