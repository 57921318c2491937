// GET /webhooks — the endpoints of the key's billing scope (never a secret).

import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { WebhookEndpointList } from '../../../webhooks/schemas.ts';
import { listEndpoints } from '../../../webhooks/service.ts';

export default defineRoute({
  method: 'GET',
  path: '/webhooks',
  operationId: 'listWebhooks',
  summary: 'List webhook endpoints',
  description: 'Every endpoint of the key\'s billing scope, oldest first. Secrets are never listed.',
  tag: 'Webhooks',
  scope: 'read',
  bucket: 'read',
  success: { status: 200, description: 'The endpoints.', schema: WebhookEndpointList, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [401, 403, 429, 503],
  async handler(ctx, event, { caller }) {
    return sendJson(event, await listEndpoints(ctx, caller), { headers: { 'cache-control': 'no-store' } });
  },
});
