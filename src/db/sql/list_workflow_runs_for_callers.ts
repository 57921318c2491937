// kiln.list_workflow_runs_for_callers: GET /workflows/{id}/runs for a batch of callers already
// authorized — each one's page of runs (kiln.list_workflow_runs; body null when the workflow is
// not the caller's scope's). Read-only: runs on the read replica.

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { WorkflowRunSummaryRow } from './list_workflow_runs.ts';

export function listWorkflowRunsForCallers(
  sql: Queryable, accountIds: string[], workspaceIds: Array<string | null>, workflowIds: string[], limits: number[], offsets: number[],
) {
  return sql<Array<{ ord: number; body: WorkflowRunSummaryRow[] | null }>>`select * from kiln.list_workflow_runs_for_callers(
    ${pgArray(sql, accountIds, ARRAY_OID.uuid)}, ${pgArray(sql, workspaceIds, ARRAY_OID.uuid)}, ${pgArray(sql, workflowIds, ARRAY_OID.uuid)},
    ${pgArray(sql, limits, ARRAY_OID.int4)}, ${pgArray(sql, offsets, ARRAY_OID.int4)})`;
}
