// GET /admin/models — the whole catalog, disabled entries included, with cost and billed price.

import { AdminModelList } from '../../../admin/schemas.ts';
import { listAllModels } from '../../../admin/service.ts';
import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';

export default defineRoute({
  method: 'GET',
  path: '/admin/models',
  operationId: 'adminListModels',
  summary: 'List the whole catalog',
  description: 'Every catalog entry in catalog order, disabled ones included, with what its upstream charges (`cost`), the markup and what callers are billed (`pricing`).',
  tag: 'admin',
  scope: 'admin',
  bucket: 'read',
  success: { status: 200, description: 'The catalog.', schema: AdminModelList, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [401, 403, 429, 503],
  async handler(ctx, event) {
    return sendJson(event, await listAllModels(ctx), { headers: { 'cache-control': 'no-store' } });
  },
});
