// kiln.snapshot_workflow: the graph of a workflow of the caller's scope (not deleted), locked until
// the end of the transaction, and the enabled catalog — what a run snapshots. No row otherwise.

import type { Queryable } from '../pool.ts';
import type { ModelRow } from './enabled_models.ts';

export function snapshotWorkflow(sql: Queryable, accountId: string, workspaceId: string | null, workflowId: string) {
  return sql<Array<{ graph: unknown; models: ModelRow[] }>>`select graph, models from kiln.snapshot_workflow(${accountId}::uuid, ${workspaceId}::uuid, ${workflowId}::uuid)`;
}
