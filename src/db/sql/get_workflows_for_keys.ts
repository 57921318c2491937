// kiln.get_workflows_for_keys: GET /workflows/{id} for a batch — authorizes each key and reads
// that workflow of its scope as its row in JSON (body null when not admitted or absent).

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { AuthColumns } from './authorize_requests.ts';
import type { WorkflowRow } from './get_workflow.ts';

export interface GetWorkflowsForKeysRow extends AuthColumns {
  body: WorkflowRow | null;
}

export function getWorkflowsForKeys(sql: Queryable, keyHashes: Uint8Array[], readRpm: number, ids: string[]) {
  return sql<GetWorkflowsForKeysRow[]>`select * from kiln.get_workflows_for_keys(
    ${pgArray(sql, keyHashes, ARRAY_OID.bytea)}, ${readRpm}::int, ${pgArray(sql, ids, ARRAY_OID.uuid)})`;
}
