// kiln.replace_workflow: replaces a workflow's graph and name (null keeps the name), version + 1;
// emits workflow.saved. KN001 / KV001 as kiln.lock_workflow.

import type postgres from 'postgres';
import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { WorkflowRow } from './get_workflow.ts';

export function replaceWorkflow(
  sql: Queryable, accountId: string | null, workspaceId: string | null, id: string, name: string | null, graph: unknown, ifVersions: number[] | null,
) {
  return sql<WorkflowRow[]>`select * from kiln.replace_workflow(${accountId}::uuid, ${workspaceId}::uuid, ${id}::uuid, ${name}::text,
    ${sql.json(graph as postgres.JSONValue)}::jsonb, ${ifVersions === null ? null : pgArray(sql, ifVersions, ARRAY_OID.int8)}::bigint[])`;
}
