// GET /models — the curated catalog with billed (marked-up) prices, cached for 5 minutes.

import * as v from 'valibot';
import { listModels, publicModel } from '../../catalog.ts';
import type { Context } from '../../context.ts';
import { authorize, sendJson } from '../../http.ts';
import { defineRoute } from '../../route.ts';
import { registerSchemas } from '../../schemas.ts';

export const Model = v.object({
  id: v.pipe(v.string(), v.description('Value to pass as `model`.')),
  name: v.string(),
  category: v.picklist(['image', 'text', 'svg']),
  provider: v.string(),
  supports_image_input: v.boolean(),
  input_modalities: v.array(v.string()),
  output_modalities: v.array(v.string()),
  pricing: v.pipe(
    v.nullable(v.record(v.string(), v.number())),
    v.description('Marked-up price billed to the caller, in microdollars (per image, or per input/output token); null when unknown.'),
  ),
});
export const ModelList = v.object({ data: v.array(Model) });
registerSchemas({ Model, ModelList });

const TTL_MS = 5 * 60 * 1000;
const cache = new WeakMap<Context, { at: number; body: string; models: ReturnType<typeof publicModel>[] }>();

/** The public catalog, refreshed from the database at most every 5 minutes per process. */
export async function cachedCatalog(ctx: Context) {
  const hit = cache.get(ctx);
  if (hit && Date.now() - hit.at < TTL_MS) return hit;
  const models = (await listModels(ctx.sql, ctx.config.defaultMarkup)).map(publicModel);
  const entry = { at: Date.now(), models, body: JSON.stringify({ data: models }) };
  cache.set(ctx, entry);
  return entry;
}

export function invalidateCatalog(ctx: Context) {
  cache.delete(ctx);
}

export default defineRoute({
  method: 'GET',
  path: '/models',
  operationId: 'listModels',
  summary: 'List the model catalog',
  description: 'The curated catalog with the marked-up prices billed to the caller. Cached for 5 minutes.',
  tag: 'Models',
  scope: 'read',
  success: { status: 200, description: 'The catalog.', schema: ModelList, headers: { 'cache-control': 'Cached for 5 minutes.' } },
  errors: [401, 403, 429, 500, 503],
  async handler(ctx, event) {
    // Authorization (and its rate limit) and the catalog read are independent: run them together.
    const [, catalog] = await Promise.all([authorize(ctx, event, { scope: 'read', bucket: 'read' }), cachedCatalog(ctx)]);
    return sendJson(event, catalog.body, { raw: true, headers: { 'cache-control': 'private, max-age=300' } });
  },
});
