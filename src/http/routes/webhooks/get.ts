// GET /webhooks/{id} — one endpoint of the key's billing scope (never its secret).

import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { WebhookEndpoint } from '../../../webhooks/schemas.ts';
import { getEndpoint } from '../../../webhooks/service.ts';
import { EndpointIdParam, endpointId } from './_params.ts';

export default defineRoute<string>({
  method: 'GET',
  path: '/webhooks/{id}',
  operationId: 'getWebhook',
  summary: 'Get a webhook endpoint',
  description: '404 when it does not exist or belongs to another scope.',
  tag: 'Webhooks',
  scope: 'read',
  bucket: 'read',
  params: { id: EndpointIdParam },
  success: { status: 200, description: 'The endpoint.', schema: WebhookEndpoint, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 429, 503],
  prepare: (_ctx, event) => endpointId(event),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await getEndpoint(ctx, caller, payload!), { headers: { 'cache-control': 'no-store' } });
  },
});
