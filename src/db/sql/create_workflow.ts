// kiln.create_workflow: saves a new workflow, version 1, owned by the workspace when given (KF001
// unless the account is a member), else by the account; emits workflow.saved. The graph is
// validated by the caller.

import type postgres from 'postgres';
import type { Queryable } from '../pool.ts';
import type { WorkflowRow } from './get_workflow.ts';

export function createWorkflow(sql: Queryable, accountId: string, workspaceId: string | null, name: string, graph: unknown) {
  return sql<WorkflowRow[]>`select * from kiln.create_workflow(${accountId}::uuid, ${workspaceId}::uuid, ${name}, ${sql.json(graph as postgres.JSONValue)}::jsonb)`;
}
