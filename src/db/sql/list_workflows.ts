// kiln.list_workflows: the workflow summaries of the caller's scope (the workspace of a
// workspace-bound caller, else the account), most recently updated first.

import type { Queryable } from '../pool.ts';

export interface WorkflowSummaryRow {
  id: string;
  name: string;
  updated_at: string;
}

export function listWorkflows(sql: Queryable, accountId: string, workspaceId: string | null, limit: number, offset: number) {
  return sql<Array<{ data: WorkflowSummaryRow[] }>>`select kiln.list_workflows(${accountId}::uuid, ${workspaceId}::uuid, ${limit}::int, ${offset}::int) as data`;
}
