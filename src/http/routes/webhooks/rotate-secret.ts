// POST /webhooks/{id}/rotate-secret — a new signing secret; for 24 h deliveries are signed with
// both the new and the old one.

import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { WebhookSecret } from '../../../webhooks/schemas.ts';
import { rotateSecret } from '../../../webhooks/service.ts';
import { EndpointIdParam, endpointId } from './_params.ts';

export default defineRoute<string>({
  method: 'POST',
  path: '/webhooks/{id}/rotate-secret',
  operationId: 'rotateWebhookSecret',
  summary: 'Rotate a webhook endpoint\'s signing secret',
  description:
    'Answers the new secret (shown only here). For the next 24 h every delivery carries two signatures in `webhook-signature`, space-separated: ' +
    'one under the new secret and one under the old, so a receiver can switch at any time within the overlap. No request body. A workspace\'s endpoint: only the member who made it or a workspace owner or admin (else 403 `forbidden`, nothing changes).',
  tag: 'Webhooks',
  scope: 'write',
  bucket: null,
  params: { id: EndpointIdParam },
  success: { status: 200, description: 'The new secret.', schema: WebhookSecret, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 429, 503],
  prepare: (_ctx, event) => endpointId(event),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await rotateSecret(ctx, caller, payload!), { headers: { 'cache-control': 'no-store' } });
  },
});
