// PATCH /admin/models/{id} — enable or disable a catalog entry (audited).

import { AdminModel, UpdateModelRequest } from '../../../admin/schemas.ts';
import { setModelEnabled } from '../../../admin/service.ts';
import { readJson, sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { ModelIdParam, modelId } from './_params.ts';

export default defineRoute<{ id: string; body: unknown }>({
  method: 'PATCH',
  path: '/admin/models/{id}',
  operationId: 'adminUpdateModel',
  summary: 'Enable or disable a model',
  description:
    'A disabled entry is refused by new generations at once (400; workflow runs already started keep their snapshot) and leaves GET /models; ' +
    'this process lists the change immediately, other API processes within five minutes. Audited as `model.enabled` / `model.disabled`.',
  tag: 'admin',
  scope: 'admin',
  bucket: null,
  params: { id: ModelIdParam },
  body: UpdateModelRequest,
  success: { status: 200, description: 'The entry as updated.', schema: AdminModel, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 413, 415, 429, 503],
  prepare: async (ctx, event) => ({ id: modelId(event), body: await readJson(event, ctx.config.maxBodyBytes) }),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await setModelEnabled(ctx, caller, payload!.id, payload!.body), { headers: { 'cache-control': 'no-store' } });
  },
});
