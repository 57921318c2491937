// kiln.snapshot_workflow: an owned workflow's graph, locked until the end of the transaction, and
// the enabled catalog — what a run snapshots. No row when the workflow is not the account's.

import type { Queryable } from '../pool.ts';
import type { ModelRow } from './enabled_models.ts';

export function snapshotWorkflow(sql: Queryable, accountId: string, workflowId: string) {
  return sql<Array<{ graph: unknown; models: ModelRow[] }>>`select graph, models from kiln.snapshot_workflow(${accountId}::uuid, ${workflowId}::uuid)`;
}
