// kiln.list_workflows: an account's workflow summaries, most recently updated first.

import type { Queryable } from '../pool.ts';

export interface WorkflowSummaryRow {
  id: string;
  name: string;
  updated_at: string;
}

export function listWorkflows(sql: Queryable, accountId: string, limit: number, offset: number) {
  return sql<Array<{ data: WorkflowSummaryRow[] }>>`select kiln.list_workflows(${accountId}::uuid, ${limit}::int, ${offset}::int) as data`;
}
