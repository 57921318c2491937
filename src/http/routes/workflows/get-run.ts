// GET /workflows/{id}/runs/{runId} — a run's status, progress and the results settled so far.
// Never cached: results grow while the run is in flight.

import { getRouterParam } from 'h3';
import * as v from 'valibot';
import { json } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { Uuid } from '../../schemas.ts';
import { WorkflowRun } from '../../../workflows/schemas.ts';
import { getRunCall, readRun, renderRun, runIds, type RunIds, type RunRow } from '../../../workflows/service.ts';

export default defineRoute<RunIds, { body: RunRow | null }>({
  method: 'GET',
  path: '/workflows/{id}/runs/{runId}',
  operationId: 'getWorkflowRun',
  summary: 'Poll a workflow run',
  description:
    'Never cached. `results` gain an entry as each output settles (image outputs carry a signed `url`; code, screen and design outputs carry `code`). ' +
    '404 when the run does not exist, belongs to another account, or is not a run of that workflow.',
  tag: 'Workflows',
  scope: 'read',
  bucket: 'read',
  params: {
    id: v.pipe(Uuid, v.description('Workflow id.')),
    runId: v.pipe(Uuid, v.description('Run id from `POST /workflows/{id}/runs`.')),
  },
  success: { status: 200, description: 'The run.', schema: WorkflowRun, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 429, 503],
  // Authorization, rate limit and the read in one round trip.
  call: getRunCall,
  prepare: (_ctx, event) => runIds(getRouterParam(event, 'id'), getRouterParam(event, 'runId')),
  async handler(ctx, _event, { caller, row, payload }) {
    const body = await renderRun(ctx, row!.body, () => readRun(ctx, caller, payload!));
    return json(body, 200, { 'cache-control': 'no-store' });
  },
});
