// POST /workflows/{id}/runs — snapshot a workflow of the key's scope and queue its ready outputs
// in one transaction; replies 202 at once. Poll GET /workflows/{id}/runs/{runId} for progress.
// With an Idempotency-Key, the key is claimed first in that transaction.

import { getRouterParam } from 'h3';
import * as v from 'valibot';
import { IDEMPOTENCY_HEADER, IdempotencyKeySchema, idempotencyOf, REPLAYED_HEADER } from '../../../idempotency.ts';
import { readIdempotencyKey } from '../../idempotency-header.ts';
import { json, readJson } from '../../json.ts';
import { apiUrl, defineRoute } from '../../route.ts';
import { Uuid } from '../../../schemas.ts';
import type { Context } from '../../../context.ts';
import type { H3Event } from 'h3';
import type { Attribution } from '../../../generations/attribution.ts';
import { RunAccepted, RunRequest } from '../../../workflows/schemas.ts';
import { parseRunRequest, startRunOnce } from '../../../workflows/service.ts';

/** No body (or an empty one) is none: runs took no body before attribution. */
async function optionalBody(ctx: Context, event: H3Event): Promise<unknown> {
  const len = event.req.headers.get('content-length');
  if ((len === null || len === '0') && !event.req.headers.has('transfer-encoding')) return undefined;
  return readJson(event, ctx.config.maxBodyBytes);
}

export default defineRoute<Attribution>({
  method: 'POST',
  path: '/workflows/{id}/runs',
  operationId: 'runWorkflow',
  summary: 'Run a saved workflow server-side',
  description:
    'Takes an immutable snapshot of the graph (later edits change neither what runs nor what is charged), then runs every prompt node ' +
    'in dependency order, independent ones in parallel (bounded by the plan\'s parallel slots), feeding each output into the prompts it connects to. ' +
    'Each output is one generation on the caller\'s budget. Outputs not started within the run window (about 5 minutes) fail the run. ' +
    'The body is optional: none (or `{}`) starts the run unattributed; `endUser` and `metadata` attribute it (docs: Attribution), and every output inherits them. ' +
    'Only a workflow of the key\'s billing scope that is not deleted runs (404 otherwise). ' +
    'With an `Idempotency-Key`, a retry (same key, same workflow, same body, any key of the account) answers the same run id with `idempotent-replayed: true` and starts nothing; ' +
    'concurrent duplicates start one run.',
  tag: 'Workflows',
  scope: 'write',
  bucket: null,
  params: { id: v.pipe(Uuid, v.description('Workflow id from `GET /workflows`.')) },
  headers: { [IDEMPOTENCY_HEADER]: IdempotencyKeySchema },
  body: RunRequest,
  bodyOptional: true,
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
  errors: [400, 401, 402, 403, 404, 413, 415, 429, 500, 503],
  // The body (optional) is read and checked once the key checks out.
  prepare: async (ctx, event) => parseRunRequest(await optionalBody(ctx, event)),
  async handler(ctx, event, { caller, payload }) {
    const id = getRouterParam(event, 'id') ?? '';
    // Without attribution the key alone identifies the request within its workflow (the
    // operation), as before bodies existed; with it, the attribution is the fingerprint.
    const attribution = payload ?? {};
    const key = readIdempotencyKey(event);
    const run = await startRunOnce(ctx, caller, id, idempotencyOf(key, Object.keys(attribution).length ? attribution : null), attribution);
    const headers: Record<string, string> = { 'cache-control': 'no-store', location: apiUrl(ctx, `/workflows/${id}/runs/${run.body.id}`) };
    if (run.replayed) headers[REPLAYED_HEADER] = 'true';
    return json(run.body, 202, headers);
  },
});
