// kiln.update_workflow: replaces a workflow's graph and/or name (an edit: bumps updated_at).

import type postgres from 'postgres';
import type { Queryable } from '../pool.ts';
import type { WorkflowRow } from './get_workflow.ts';

export function updateWorkflow(sql: Queryable, id: string, graph: unknown, name: string | null) {
  return sql<WorkflowRow[]>`select * from kiln.update_workflow(${id}::uuid, ${sql.json(graph as postgres.JSONValue)}::jsonb, ${name})`;
}
