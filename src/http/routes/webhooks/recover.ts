// POST /webhooks/{id}/recover — after an outage at the receiver, send every failed message again.

import { readJson, sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { RecoverAccepted, RecoverRequest } from '../../../webhooks/schemas.ts';
import { recover } from '../../../webhooks/service.ts';
import { EndpointIdParam, endpointId } from './_params.ts';

export default defineRoute<{ id: string; body: unknown }>({
  method: 'POST',
  path: '/webhooks/{id}/recover',
  operationId: 'recoverWebhook',
  summary: 'Send failed messages again',
  description: 'Every delivery of the endpoint that failed at or after `since` is sent again (same `webhook-id`, same body), as a new round on the retry schedule.',
  tag: 'Webhooks',
  scope: 'write',
  bucket: null,
  params: { id: EndpointIdParam },
  body: RecoverRequest,
  success: { status: 202, description: 'Queued.', schema: RecoverAccepted },
  errors: [400, 401, 403, 404, 413, 415, 429, 503],
  prepare: async (ctx, event) => ({ id: endpointId(event), body: await readJson(event, ctx.config.maxBodyBytes) }),
  async handler(ctx, event, { caller, payload }) {
    const count = await recover(ctx, caller, payload!.id, payload!.body);
    return sendJson(event, { accepted: true, count }, { status: 202 });
  },
});
