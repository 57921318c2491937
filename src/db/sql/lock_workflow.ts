// kiln.lock_workflow: locks a workflow of the caller's scope for the rest of the transaction and
// returns it (KN001 absent, deleted or another scope's; KV001 If-Match names another version).

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { WorkflowRow } from './get_workflow.ts';

/** `ifVersions`: the versions If-Match names (null: no condition). `accountId` null: operator access. */
export function lockWorkflow(sql: Queryable, accountId: string | null, workspaceId: string | null, id: string, ifVersions: number[] | null) {
  return sql<WorkflowRow[]>`select * from kiln.lock_workflow(${accountId}::uuid, ${workspaceId}::uuid, ${id}::uuid,
    ${ifVersions === null ? null : pgArray(sql, ifVersions, ARRAY_OID.int8)}::bigint[])`;
}
