// GET /models — the curated catalog with billed (marked-up) prices, cached for 5 minutes.

import { cachedCatalog, ModelList } from '../../../billing/catalog.ts';
import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';

export default defineRoute({
  method: 'GET',
  path: '/models',
  operationId: 'listModels',
  summary: 'List the model catalog',
  description: 'The curated catalog with the marked-up prices billed to the caller. Cached for 5 minutes.',
  tag: 'Models',
  scope: 'read',
  bucket: 'read',
  success: { status: 200, description: 'The catalog.', schema: ModelList, headers: { 'cache-control': 'Cached for 5 minutes.' } },
  errors: [401, 403, 429, 500, 503],
  async handler(ctx, event) {
    const catalog = await cachedCatalog(ctx);
    return sendJson(event, catalog.body, { raw: true, headers: { 'cache-control': 'private, max-age=300' } });
  },
});
