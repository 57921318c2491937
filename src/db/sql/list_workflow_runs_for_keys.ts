// kiln.list_workflow_runs_for_keys: GET /workflows/{id}/runs for a batch — authorizes each key
// and reads its page of runs (body null when not admitted or the workflow is not the account's).

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { AuthColumns } from './authorize_requests.ts';
import type { WorkflowRunSummaryRow } from './list_workflow_runs.ts';

export interface ListWorkflowRunsForKeysRow extends AuthColumns {
  body: WorkflowRunSummaryRow[] | null;
}

export function listWorkflowRunsForKeys(sql: Queryable, keyHashes: Uint8Array[], readRpm: number, workflowIds: string[], limits: number[], offsets: number[]) {
  return sql<ListWorkflowRunsForKeysRow[]>`select * from kiln.list_workflow_runs_for_keys(
    ${pgArray(sql, keyHashes, ARRAY_OID.bytea)}, ${readRpm}::int, ${pgArray(sql, workflowIds, ARRAY_OID.uuid)},
    ${pgArray(sql, limits, ARRAY_OID.int4)}, ${pgArray(sql, offsets, ARRAY_OID.int4)})`;
}
