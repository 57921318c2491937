// GET /workflows/{id}/runs/{runId}/graph — the structure of a run's snapshot (nodes and edges),
// so a client can draw the run and place each result of GET …/runs/{runId} on it.

import { errors } from '../../../errors.ts';
import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import type { WorkflowRunGraphJson } from '../../../db/sql/get_workflow_run_graphs_for_keys.ts';
import { runGraphCall } from '../../../workflows/run-graph.ts';
import { WorkflowRunGraph } from '../../../workflows/schemas.ts';
import type { RunIds } from '../../../workflows/service.ts';
import { RunParams, runIdsOf } from './_params.ts';

export default defineRoute<RunIds, { body: WorkflowRunGraphJson | null }>({
  method: 'GET',
  path: '/workflows/{id}/runs/{runId}/graph',
  operationId: 'getWorkflowRunGraph',
  summary: 'A run\'s graph',
  description:
    'The nodes and edges of the run\'s snapshot — ids, kinds, labels, output types, models and platforms; prompt and text values are not returned. ' +
    'The snapshot never changes, so neither does this answer. Each `results` entry of the run names its `promptNodeId` and `outputNodeId` in it. ' +
    '404 when the run does not exist, belongs to another account, or is not a run of that workflow.',
  tag: 'Workflows',
  scope: 'read',
  bucket: 'read',
  params: RunParams,
  success: { status: 200, description: 'The run\'s graph.', schema: WorkflowRunGraph, headers: { 'cache-control': '`private, max-age=3600`: a snapshot is immutable.' } },
  errors: [400, 401, 403, 404, 429, 503],
  // Authorization, rate limit and the read in one round trip.
  call: runGraphCall,
  prepare: (_ctx, event) => runIdsOf(event),
  async handler(_ctx, event, { row }) {
    if (!row?.body) throw errors.notFound('Workflow run');
    return sendJson(event, row.body, { headers: { 'cache-control': 'private, max-age=3600' } });
  },
});
