// kiln.get_workflow_runs_for_keys: GET /workflows/{id}/runs/{runId} for a batch — authorizes
// each key and reads its run (body null when not admitted or absent).

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { AuthColumns } from './authorize_requests.ts';
import type { WorkflowRunJson } from './get_workflow_run.ts';

export interface GetWorkflowRunsForKeysRow extends AuthColumns {
  body: WorkflowRunJson | null;
}

export function getWorkflowRunsForKeys(sql: Queryable, keyHashes: Uint8Array[], readRpm: number, workflowIds: string[], runIds: string[]) {
  return sql<GetWorkflowRunsForKeysRow[]>`select * from kiln.get_workflow_runs_for_keys(
    ${pgArray(sql, keyHashes, ARRAY_OID.bytea)}, ${readRpm}::int,
    ${pgArray(sql, workflowIds, ARRAY_OID.uuid)}, ${pgArray(sql, runIds, ARRAY_OID.uuid)})`;
}
