// GET /webhooks/{id}/deliveries — an endpoint's delivery log, newest first, paged by cursor.

import * as v from 'valibot';
import { sendJson } from '../../json.ts';
import { defineRoute, queryParam } from '../../route.ts';
import { WebhookDeliveryList } from '../../../webhooks/schemas.ts';
import { listDeliveries, parseDeliveryPage } from '../../../webhooks/service.ts';
import { EndpointIdParam, endpointId } from './_params.ts';

export default defineRoute<{ id: string; page: ReturnType<typeof parseDeliveryPage> }>({
  method: 'GET',
  path: '/webhooks/{id}/deliveries',
  operationId: 'listWebhookDeliveries',
  summary: 'List an endpoint\'s deliveries',
  description:
    'Newest first. Each delivery is one event\'s message to this endpoint (`id` is its `webhook-id` header, what the receiver got and what redeliver takes; `webhookId` repeats it; `deliveryId` is the delivery\'s own uuid) with its status, attempts and the last attempt\'s status code and error class. ' +
    'Response bodies of the receiver are never stored or shown. ' +
    'The log reaches back as far as the service keeps events (`KILN_EVENT_RETENTION`, 30 days unless its operator set it); a delivery still pending is kept until it ends.',
  tag: 'Webhooks',
  scope: 'read',
  bucket: 'read',
  params: { id: EndpointIdParam },
  query: {
    limit: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100), v.description('Page size, 1 to 100. Default 20.')),
    cursor: v.pipe(v.string(), v.description('`nextCursor` of the previous page.')),
  },
  success: { status: 200, description: 'A page of deliveries.', schema: WebhookDeliveryList, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 429, 503],
  prepare: (_ctx, event) => ({ id: endpointId(event), page: parseDeliveryPage(queryParam(event, 'limit'), queryParam(event, 'cursor')) }),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await listDeliveries(ctx, caller, payload!.id, payload!.page), { headers: { 'cache-control': 'no-store' } });
  },
});
