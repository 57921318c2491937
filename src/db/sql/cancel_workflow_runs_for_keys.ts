// kiln.cancel_workflow_runs_for_keys: POST /workflows/{id}/runs/{runId}/cancel for a batch —
// authorizes each key and cancels its run (outcome null when not admitted).

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { AuthColumns } from './authorize_requests.ts';
import type { WorkflowRunJson } from './get_workflow_run.ts';
import type { EndedGeneration } from './ended_generations.ts';

/** A generation a run cancel ended (migration 000057): canceled in flight, or failed before it started. */
export type SettledOutput = EndedGeneration;

export interface CancelWorkflowRunsForKeysRow extends AuthColumns {
  outcome: 'canceled' | 'conflict' | 'missing' | null;
  body: WorkflowRunJson | null;
  settled: SettledOutput[] | null;
}

export function cancelWorkflowRunsForKeys(sql: Queryable, keyHashes: Uint8Array[], readRpm: number, workflowIds: string[], runIds: string[]) {
  return sql<CancelWorkflowRunsForKeysRow[]>`select * from kiln.cancel_workflow_runs_for_keys(
    ${pgArray(sql, keyHashes, ARRAY_OID.bytea)}, ${readRpm}::int,
    ${pgArray(sql, workflowIds, ARRAY_OID.uuid)}, ${pgArray(sql, runIds, ARRAY_OID.uuid)})`;
}
