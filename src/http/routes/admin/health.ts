// GET /admin/health — upstream health per provider entry, the job queue and the webhook backlog.

import { AdminHealth } from '../../../admin/schemas.ts';
import { health } from '../../../admin/service.ts';
import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';

export default defineRoute({
  method: 'GET',
  path: '/admin/health',
  operationId: 'adminHealth',
  summary: 'Service health',
  description: 'Each network catalog entry\'s upstream (healthy, failing, skipped for its fallback, on trial), the job queue (ready, running, scheduled, how long the oldest ready job has waited) and the webhook backlog.',
  tag: 'admin',
  scope: 'admin',
  bucket: 'read',
  success: { status: 200, description: 'The health figures, read now.', schema: AdminHealth, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [401, 403, 429, 503],
  async handler(ctx, event) {
    return sendJson(event, await health(ctx), { headers: { 'cache-control': 'no-store' } });
  },
});
