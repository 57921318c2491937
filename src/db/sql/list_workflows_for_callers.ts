// kiln.list_workflows_for_callers: GET /workflows for a batch of callers already authorized — each
// one's page of workflow summaries (kiln.list_workflows). Read-only: runs on the read replica.

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { WorkflowSummaryRow } from './list_workflows.ts';

export function listWorkflowsForCallers(sql: Queryable, accountIds: string[], workspaceIds: Array<string | null>, limits: number[], offsets: number[]) {
  return sql<Array<{ ord: number; body: WorkflowSummaryRow[] }>>`select * from kiln.list_workflows_for_callers(
    ${pgArray(sql, accountIds, ARRAY_OID.uuid)}, ${pgArray(sql, workspaceIds, ARRAY_OID.uuid)},
    ${pgArray(sql, limits, ARRAY_OID.int4)}, ${pgArray(sql, offsets, ARRAY_OID.int4)})`;
}
