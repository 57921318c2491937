// kiln.get_workflow: one workflow that is not deleted, with its stored graph, when it belongs to
// the caller's scope (the workspace of a workspace-bound caller, else the account); accountId
// null: operator access.

import type { Queryable } from '../pool.ts';

/** A kiln_private.workflows row (`version` is a bigint: a string from the driver, a number in JSON). */
export interface WorkflowRow {
  id: string;
  name: string;
  account_id: string;
  workspace_id: string | null;
  scope_id: string;
  graph: unknown;
  version: string | number;
  created_at: Date | string;
  updated_at: Date | string;
  deleted_at: Date | string | null;
}

export function getWorkflow(sql: Queryable, id: string, accountId: string | null, workspaceId: string | null) {
  return sql<WorkflowRow[]>`select * from kiln.get_workflow(${id}::uuid, ${accountId}::uuid, ${workspaceId}::uuid)`;
}
