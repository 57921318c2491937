// A run's graph (the structure of its immutable snapshot), for views that draw the run as it
// settles: which output each result belongs to and what feeds it.

import { authorizedCall, type AuthorizedCall } from '../auth/access.ts';
import { getWorkflowRunGraphsForKeys, type WorkflowRunGraphJson } from '../db/sql/get_workflow_run_graphs_for_keys.ts';
import type { RunIds } from './service.ts';

/** GET /workflows/{id}/runs/{runId}/graph in one round trip: authorizes each key and reads its run's graph. */
export const runGraphCall: AuthorizedCall<RunIds, { body: WorkflowRunGraphJson | null }> = authorizedCall(100, ({ sql, config }, items) =>
  getWorkflowRunGraphsForKeys(sql, items.map((i) => i.hash), config.readRpm, items.map((i) => i.payload.workflowId), items.map((i) => i.payload.runId)));
