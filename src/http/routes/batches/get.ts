// GET /batches/{id} — a batch and its request counts.

import { getRouterParam } from 'h3';
import * as v from 'valibot';
import { batchId, getBatch } from '../../../batches/service.ts';
import { Batch } from '../../../batches/schemas.ts';
import { Uuid } from '../../../schemas.ts';
import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';

export default defineRoute<string, never>({
  method: 'GET',
  path: '/batches/{id}',
  operationId: 'getBatch',
  summary: 'Get a batch',
  description: 'The batch with its `requestCounts`. 404 for an unknown batch or another account\'s.',
  tag: 'Batches',
  scope: 'read',
  bucket: 'read',
  params: { id: v.pipe(Uuid, v.description('Batch id from `POST /batches`.')) },
  success: { status: 200, description: 'The batch.', schema: Batch, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 429, 503],
  prepare: (_ctx, event) => batchId(getRouterParam(event, 'id')),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await getBatch(ctx, caller, payload!), { headers: { 'cache-control': 'no-store' } });
  },
});
