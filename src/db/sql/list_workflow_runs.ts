// kiln.list_workflow_runs: a page of the account's runs of a workflow of its scope, newest first
// (null when the workflow is not the scope's).

import type { Queryable } from '../pool.ts';

/** One run of the list, as the API returns it. */
export interface WorkflowRunSummaryRow {
  id: string;
  status: 'pending' | 'running' | 'completed' | 'failed';
  progress: { total: number; completed: number };
  createdAt: string;
  completedAt: string | null;
  retryOf: string | null;
}

export function listWorkflowRuns(sql: Queryable, accountId: string, workspaceId: string | null, workflowId: string, limit: number, offset: number) {
  return sql<Array<{ data: WorkflowRunSummaryRow[] | null }>>`
    select kiln.list_workflow_runs(${accountId}::uuid, ${workspaceId}::uuid, ${workflowId}::uuid, ${limit}::int, ${offset}::int) as data`;
}
