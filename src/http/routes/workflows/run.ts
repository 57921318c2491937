// POST /workflows/{id}/runs — snapshot a workflow of the key's scope and queue its ready outputs
// in one transaction; replies 202 at once. Poll GET /workflows/{id}/runs/{runId} for progress.
// With an Idempotency-Key, the key is claimed first in that transaction.

import { getRouterParam } from 'h3';
import * as v from 'valibot';
import { IDEMPOTENCY_HEADER, IdempotencyKeySchema, idempotencyOf, REPLAYED_HEADER } from '../../../idempotency.ts';
import { readIdempotencyKey } from '../../idempotency-header.ts';
import { json } from '../../json.ts';
import { apiUrl, defineRoute } from '../../route.ts';
import { Uuid } from '../../../schemas.ts';
import { RunAccepted } from '../../../workflows/schemas.ts';
import { startRunOnce } from '../../../workflows/service.ts';

export default defineRoute({
  method: 'POST',
  path: '/workflows/{id}/runs',
  operationId: 'runWorkflow',
  summary: 'Run a saved workflow server-side',
  description:
    'Takes an immutable snapshot of the graph (later edits change neither what runs nor what is charged), then runs every prompt node ' +
    'in dependency order, independent ones in parallel (bounded by the plan\'s parallel slots), feeding each output into the prompts it connects to. ' +
    'Each output is one generation on the caller\'s budget. Outputs not started within the run window (about 5 minutes) fail the run. No request body. ' +
    'Only a workflow of the key\'s billing scope that is not deleted runs (404 otherwise). ' +
    'With an `Idempotency-Key`, a retry (same key, same workflow, any key of the account) answers the same run id with `idempotent-replayed: true` and starts nothing; ' +
    'concurrent duplicates start one run.',
  tag: 'Workflows',
  scope: 'write',
  bucket: null,
  params: { id: v.pipe(Uuid, v.description('Workflow id from `GET /workflows`.')) },
  headers: { [IDEMPOTENCY_HEADER]: IdempotencyKeySchema },
  success: {
    status: 202,
    description: 'Accepted; the run is pending (or, replayed, was accepted earlier with this Idempotency-Key).',
    schema: RunAccepted,
    headers: {
      location: 'The run\'s URL (`GET /workflows/{id}/runs/{runId}`).',
      'cache-control': 'Always `no-store`.',
      [REPLAYED_HEADER]: '`true` when this is the stored answer of an earlier request with the same Idempotency-Key.',
    },
  },
  errors: [400, 401, 402, 403, 404, 429, 500, 503],
  async handler(ctx, event, { caller }) {
    const id = getRouterParam(event, 'id') ?? '';
    // No body: the key alone identifies the request within its workflow (the operation).
    const key = readIdempotencyKey(event);
    const run = await startRunOnce(ctx, caller, id, idempotencyOf(key, null));
    const headers: Record<string, string> = { 'cache-control': 'no-store', location: apiUrl(ctx, `/workflows/${id}/runs/${run.body.id}`) };
    if (run.replayed) headers[REPLAYED_HEADER] = 'true';
    return json(run.body, 202, headers);
  },
});
