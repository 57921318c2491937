// kiln.get_workflow_run_graphs_for_keys: GET /workflows/{id}/runs/{runId}/graph for a batch —
// authorizes each key and reads the graph of its run's snapshot (body null when not admitted or absent).

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { AuthColumns } from './authorize_requests.ts';

/** kiln.get_workflow_run_graph's jsonb: the snapshot's structure, no prompt or text values. */
export interface WorkflowRunGraphJson {
  runId: string;
  workflowId: string;
  nodes: Array<{ id: string; kind: string; label?: string; output?: string; model?: string; platform?: string }>;
  edges: Array<{ from: string; to: string }>;
}

export interface GetWorkflowRunGraphsForKeysRow extends AuthColumns {
  body: WorkflowRunGraphJson | null;
}

export function getWorkflowRunGraphsForKeys(sql: Queryable, keyHashes: Uint8Array[], readRpm: number, workflowIds: string[], runIds: string[]) {
  return sql<GetWorkflowRunGraphsForKeysRow[]>`select * from kiln.get_workflow_run_graphs_for_keys(
    ${pgArray(sql, keyHashes, ARRAY_OID.bytea)}, ${readRpm}::int,
    ${pgArray(sql, workflowIds, ARRAY_OID.uuid)}, ${pgArray(sql, runIds, ARRAY_OID.uuid)})`;
}
