// GET /generations/{id} — status, result (image with a freshly signed URL, or code) and error.
// Never cached. Only the caller's own generations created through the REST API are visible.

import { getRouterParam } from 'h3';
import * as v from 'valibot';
import { errors } from '../../../errors.ts';
import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { Uuid } from '../../schemas.ts';
import { GenerationStatus } from '../../../generations/schemas.ts';
import { isUuid, pollGenerationCall, renderGeneration } from '../../../generations/service.ts';

export default defineRoute({
  method: 'GET',
  path: '/generations/{id}',
  operationId: 'getGeneration',
  summary: 'Poll a generation',
  description: 'Never cached. 404 when the id does not exist, belongs to another account, or was not created through the API.',
  tag: 'Generations',
  scope: 'read',
  bucket: 'read',
  params: { id: v.pipe(Uuid, v.description('Generation id from `POST /generations`.')) },
  success: { status: 200, description: 'The generation.', schema: GenerationStatus, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 429, 503],
  // Authorization, rate limits and the read in one round trip.
  call: pollGenerationCall,
  prepare(_ctx, event) {
    const id = getRouterParam(event, 'id');
    if (!isUuid(id)) throw errors.invalid('id: must be a uuid');
    return id.toLowerCase();
  },
  async handler(ctx, event, { row }) {
    if (!row?.body) throw errors.notFound('Generation');
    return sendJson(event, await renderGeneration(ctx, row.body), { headers: { 'cache-control': 'no-store' } });
  },
});
