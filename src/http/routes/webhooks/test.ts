// POST /webhooks/{id}/test — a webhook.test event, delivered to this endpoint only.

import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { Accepted } from '../../../webhooks/schemas.ts';
import { sendTest } from '../../../webhooks/service.ts';
import { EndpointIdParam, endpointId } from './_params.ts';

export default defineRoute<string>({
  method: 'POST',
  path: '/webhooks/{id}/test',
  operationId: 'testWebhook',
  summary: 'Send a test event',
  description: 'Queues a `webhook.test` event (`data` = `{ "endpointId" }`) for this endpoint only, signed and retried like any other. 409 `conflict` when the endpoint is disabled. No request body.',
  tag: 'Webhooks',
  scope: 'write',
  bucket: null,
  params: { id: EndpointIdParam },
  success: { status: 202, description: 'Queued.', schema: Accepted },
  errors: [400, 401, 403, 404, 409, 429, 503],
  prepare: (_ctx, event) => endpointId(event),
  async handler(ctx, event, { caller, payload }) {
    await sendTest(ctx, caller, payload!);
    return sendJson(event, { accepted: true }, { status: 202 });
  },
});
