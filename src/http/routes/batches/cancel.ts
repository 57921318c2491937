// POST /batches/{id}/cancel — every line not started ends canceled, uncharged; lines in flight are
// canceled as POST /generations/{id}/cancel cancels them.

import { getRouterParam } from 'h3';
import * as v from 'valibot';
import { batchId, cancelBatch } from '../../../batches/service.ts';
import { Batch } from '../../../batches/schemas.ts';
import { Uuid } from '../../../schemas.ts';
import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';

export default defineRoute<string, never>({
  method: 'POST',
  path: '/batches/{id}/cancel',
  operationId: 'cancelBatch',
  summary: 'Cancel a batch',
  description:
    'The batch goes `canceling`: every line not yet started ends `canceled` (nothing charged), and lines in flight are canceled as ' +
    '`POST /generations/{id}/cancel` would (reservation released, provider call aborted); once all have ended it is `canceled`. ' +
    'Canceling a batch already canceling answers it again; 409 `conflict` once it has ended.',
  tag: 'Batches',
  scope: 'write',
  bucket: 'read',
  params: { id: v.pipe(Uuid, v.description('Batch id from `POST /batches`.')) },
  success: { status: 200, description: 'The batch, canceling or canceled.', schema: Batch, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 409, 429, 503],
  prepare: (_ctx, event) => batchId(getRouterParam(event, 'id')),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await cancelBatch(ctx, caller, payload!), { headers: { 'cache-control': 'no-store' } });
  },
});
