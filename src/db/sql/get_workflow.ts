// kiln.get_workflow: one workflow with its stored graph; for `accountId` only when that account
// owns it (null: operator access).

import type { Queryable } from '../pool.ts';

/** A kiln_private.workflows row. */
export interface WorkflowRow {
  id: string;
  name: string;
  account_id: string;
  workspace_id: string | null;
  graph: unknown;
  created_at: Date;
  updated_at: Date;
}

export function getWorkflow(sql: Queryable, id: string, accountId: string | null) {
  return sql<WorkflowRow[]>`select * from kiln.get_workflow(${id}::uuid, ${accountId}::uuid)`;
}
