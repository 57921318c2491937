// kiln.set_workspace_plan: a workspace's Team plan status and, when asked, its pooled budget.

import type { Queryable } from '../pool.ts';
import type { WorkspaceRow } from './create_workspace.ts';

export function setWorkspacePlan(sql: Queryable, workspaceId: string, status: string, budgetMicros: bigint | null, setBudget: boolean) {
  return sql<WorkspaceRow[]>`select * from kiln.set_workspace_plan(${workspaceId}::uuid, ${status}, ${budgetMicros === null ? null : budgetMicros.toString()}::bigint, ${setBudget})`;
}
