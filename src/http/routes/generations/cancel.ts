// POST /generations/{id}/cancel — takes a job back: a pending or processing generation ends
// failed with error `canceled`, its reservation released (nothing charged) and its provider call
// aborted wherever its worker runs. One round trip: the key and the cancel in one transaction.

import { getRouterParam } from 'h3';
import * as v from 'valibot';
import { errors } from '../../../errors.ts';
import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { isUuid, Uuid } from '../../../schemas.ts';
import { GenerationStatus } from '../../../generations/schemas.ts';
import { cancelGenerationCall, canceledGeneration, type CancelColumns } from '../../../generations/service.ts';

export default defineRoute<string, CancelColumns>({
  method: 'POST',
  path: '/generations/{id}/cancel',
  operationId: 'cancelGeneration',
  summary: 'Cancel a generation',
  description:
    'A pending or processing generation ends `failed` with error `canceled`; its reservation is released (no charge) and a running provider call is aborted within seconds, whichever worker runs it. ' +
    'No request body. 409 `conflict` when the generation has already completed or failed; 404 as for `GET /generations/{id}`. ' +
    'Counts against the key\'s read rate limit, like a poll.',
  tag: 'Generations',
  scope: 'write',
  // A cancel costs what a poll costs: the per-key read bucket bounds it (decided in issue #12).
  bucket: 'read',
  params: { id: v.pipe(Uuid, v.description('Generation id from `POST /generations`.')) },
  success: { status: 200, description: 'The canceled generation.', schema: GenerationStatus, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 409, 429, 503],
  call: cancelGenerationCall,
  prepare(_ctx, event) {
    const id = getRouterParam(event, 'id');
    if (!isUuid(id)) throw errors.invalid('id: must be a uuid');
    return id.toLowerCase();
  },
  async handler(ctx, event, { row }) {
    return sendJson(event, await canceledGeneration(ctx, row!), { headers: { 'cache-control': 'no-store' } });
  },
});
