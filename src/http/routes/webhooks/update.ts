// PATCH /webhooks/{id} — change an endpoint's url, event filter, description or enabled state.

import { readJson, sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { UpdateWebhookRequest, WebhookEndpoint } from '../../../webhooks/schemas.ts';
import { updateEndpoint } from '../../../webhooks/service.ts';
import { EndpointIdParam, endpointId } from './_params.ts';

export default defineRoute<{ id: string; body: unknown }>({
  method: 'PATCH',
  path: '/webhooks/{id}',
  operationId: 'updateWebhook',
  summary: 'Update a webhook endpoint',
  description:
    'Fields left out stay as they are; `events: null` means every type. A new `url` is checked as on create. ' +
    '`enabled: true` enables an endpoint the service disabled (after a 410 or 5 days of failures); deliveries that failed meanwhile can be sent again with `POST /webhooks/{id}/recover`. A workspace\'s endpoint: only the member who made it or a workspace owner or admin (else 403 `forbidden`, nothing changes).',
  tag: 'Webhooks',
  scope: 'write',
  bucket: null,
  params: { id: EndpointIdParam },
  body: UpdateWebhookRequest,
  success: { status: 200, description: 'The endpoint as updated.', schema: WebhookEndpoint, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 413, 415, 429, 503],
  prepare: async (ctx, event) => ({ id: endpointId(event), body: await readJson(event, ctx.config.maxBodyBytes) }),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await updateEndpoint(ctx, caller, payload!.id, payload!.body), { headers: { 'cache-control': 'no-store' } });
  },
});
