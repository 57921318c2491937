// POST /workflows/{id}/runs — snapshot the caller's workflow and queue its ready outputs in one
// transaction; replies 202 at once. Poll GET /workflows/{id}/runs/{runId} for progress.

import { getRouterParam } from 'h3';
import * as v from 'valibot';
import { json } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { Uuid } from '../../schemas.ts';
import { RunAccepted } from '../../../workflows/schemas.ts';
import { startRun } from '../../../workflows/service.ts';

export default defineRoute({
  method: 'POST',
  path: '/workflows/{id}/runs',
  operationId: 'runWorkflow',
  summary: 'Run a saved workflow server-side',
  description:
    'Takes an immutable snapshot of the graph (later edits change neither what runs nor what is charged), then runs every prompt node ' +
    'in dependency order, independent ones in parallel (bounded by the plan\'s parallel slots), feeding each output into the prompts it connects to. ' +
    'Each output is one generation on the caller\'s budget. Outputs not started within the run window (about 5 minutes) fail the run. No request body.',
  tag: 'Workflows',
  scope: 'write',
  bucket: null,
  params: { id: v.pipe(Uuid, v.description('Workflow id from `GET /workflows`.')) },
  success: { status: 202, description: 'Accepted; the run is pending.', schema: RunAccepted },
  errors: [400, 401, 402, 403, 404, 429, 500, 503],
  async handler(ctx, event, { caller }) {
    const id = getRouterParam(event, 'id') ?? '';
    const run = await startRun(ctx, caller, id);
    return json(run, 202, { 'cache-control': 'no-store', location: `${ctx.config.publicUrl}/api/v1/workflows/${id}/runs/${run.id}` });
  },
});
