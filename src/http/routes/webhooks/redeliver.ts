// POST /webhooks/{id}/deliveries/{deliveryId}/redeliver — send the same message again.

import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { Accepted } from '../../../webhooks/schemas.ts';
import { redeliver } from '../../../webhooks/service.ts';
import { DeliveryIdParam, deliveryRef, EndpointIdParam, endpointId, type DeliveryRef } from './_params.ts';

export default defineRoute<{ id: string; delivery: DeliveryRef }>({
  method: 'POST',
  path: '/webhooks/{id}/deliveries/{deliveryId}/redeliver',
  operationId: 'redeliverWebhook',
  summary: 'Redeliver a message',
  description:
    'Sends the delivery\'s message again — the same `webhook-id` and the same body (signed with the current secret, with a new `webhook-timestamp`) — ' +
    'as a new round on the retry schedule, whatever its status. `deliveryId` is the message\'s `webhook-id` as the receiver got it (`msg_…`, the delivery\'s `id` in the log), or the delivery\'s uuid (`deliveryId` in the log). ' +
    '404 when this endpoint has no such delivery or belongs to another scope. No request body.',
  tag: 'Webhooks',
  scope: 'write',
  bucket: null,
  params: { id: EndpointIdParam, deliveryId: DeliveryIdParam },
  success: { status: 202, description: 'Queued.', schema: Accepted },
  errors: [400, 401, 403, 404, 429, 503],
  prepare: (_ctx, event) => ({ id: endpointId(event), delivery: deliveryRef(event) }),
  async handler(ctx, event, { caller, payload }) {
    await redeliver(ctx, caller, payload!.id, payload!.delivery);
    return sendJson(event, { accepted: true }, { status: 202 });
  },
});
