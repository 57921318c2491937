// POST /workflows/{id}/runs/{runId}/cancel — stops a run: outputs not started are abandoned,
// outputs in flight are aborted and released, the run ends failed with error `canceled`;
// completed results (and their charges) stay. One round trip: the key and the cancel.

import { json } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { WorkflowRun } from '../../../workflows/schemas.ts';
import { cancelRunCall, canceledRun, type CancelRunColumns, type RunIds } from '../../../workflows/service.ts';
import { RunParams, runIdsOf } from './_params.ts';

export default defineRoute<RunIds, CancelRunColumns>({
  method: 'POST',
  path: '/workflows/{id}/runs/{runId}/cancel',
  operationId: 'cancelWorkflowRun',
  summary: 'Cancel a workflow run',
  description:
    'The run ends `failed` with error `canceled`: outputs not started are abandoned, outputs in flight are aborted and their reservations released (they appear in `results` as `failed` with error `canceled`); ' +
    'only completed outputs are charged, and their results stay. No request body. 409 `conflict` when the run has already completed or failed; 404 as for `GET /workflows/{id}/runs/{runId}`. ' +
    'Counts against the key\'s read rate limit, like a poll.',
  tag: 'Workflows',
  scope: 'write',
  bucket: 'read',
  params: RunParams,
  success: { status: 200, description: 'The canceled run.', schema: WorkflowRun, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 409, 429, 503],
  call: cancelRunCall,
  prepare: (_ctx, event) => runIdsOf(event),
  async handler(ctx, _event, { row }) {
    return json(await canceledRun(ctx, row!), 200, { 'cache-control': 'no-store' });
  },
});
