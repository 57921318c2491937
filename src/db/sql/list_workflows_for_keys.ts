// kiln.list_workflows_for_keys: GET /workflows for a batch — authorizes each key and reads its
// page of workflow summaries (body null when not admitted).

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { AuthColumns } from './authorize_requests.ts';
import type { WorkflowSummaryRow } from './list_workflows.ts';

export interface ListWorkflowsForKeysRow extends AuthColumns {
  body: WorkflowSummaryRow[] | null;
}

export function listWorkflowsForKeys(sql: Queryable, keyHashes: Uint8Array[], readRpm: number, limits: number[], offsets: number[]) {
  return sql<ListWorkflowsForKeysRow[]>`select * from kiln.list_workflows_for_keys(
    ${pgArray(sql, keyHashes, ARRAY_OID.bytea)}, ${readRpm}::int,
    ${pgArray(sql, limits, ARRAY_OID.int4)}, ${pgArray(sql, offsets, ARRAY_OID.int4)})`;
}
