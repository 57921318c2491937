// kiln.delete_workflow: deletes a workflow of the caller's scope (soft: its runs stay readable);
// emits workflow.deleted. KN001 / KV001 as kiln.lock_workflow.

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { WorkflowRow } from './get_workflow.ts';

export function deleteWorkflow(sql: Queryable, accountId: string, workspaceId: string | null, id: string, ifVersions: number[] | null) {
  return sql<WorkflowRow[]>`select * from kiln.delete_workflow(${accountId}::uuid, ${workspaceId}::uuid, ${id}::uuid,
    ${ifVersions === null ? null : pgArray(sql, ifVersions, ARRAY_OID.int8)}::bigint[])`;
}
