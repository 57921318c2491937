// POST /workflows/{id}/runs/{runId}/retry — a new run of a failed run's snapshot: completed
// outputs are reused (not run, not charged again), the failed and abandoned ones and what depends
// on them run again. Replies 202 at once, like POST /workflows/{id}/runs.

import * as v from 'valibot';
import { json } from '../../json.ts';
import { apiUrl, defineRoute } from '../../route.ts';
import { Uuid } from '../../../schemas.ts';
import { RunAccepted } from '../../../workflows/schemas.ts';
import { retryRun } from '../../../workflows/service.ts';
import { runIdsOf, WorkflowIdParam } from './_params.ts';

export default defineRoute({
  method: 'POST',
  path: '/workflows/{id}/runs/{runId}/retry',
  operationId: 'retryWorkflowRun',
  summary: 'Retry a failed workflow run',
  description:
    'Starts a new run on the failed run\'s snapshot (not the workflow as saved now), billed to this key: completed outputs are reused — their results copied, never run or charged again (`costMicros` 0) — ' +
    'and only the failed and abandoned outputs and what depends on them run. Outputs of the failed run still in flight are canceled first, so none runs twice. ' +
    'The new run\'s `retryOf` names the failed run. No request body. 409 `conflict` when the run is not `failed` or was already retried (retry the newer run instead).',
  tag: 'Workflows',
  scope: 'write',
  bucket: null,
  params: { id: WorkflowIdParam, runId: v.pipe(Uuid, v.description('Id of the failed run.')) },
  success: { status: 202, description: 'Accepted; the new run is pending.', schema: RunAccepted, headers: { location: 'The new run\'s URL (`GET /workflows/{id}/runs/{runId}`).', 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 402, 403, 404, 409, 429, 500, 503],
  async handler(ctx, event, { caller }) {
    const ids = runIdsOf(event);
    const run = await retryRun(ctx, caller, ids);
    return json(run, 202, { 'cache-control': 'no-store', location: apiUrl(ctx, `/workflows/${ids.workflowId}/runs/${run.id}`) });
  },
});
