// Path ids of the webhook routes, checked before any SQL (400 naming the bad one).

import { getRouterParam, type H3Event } from 'h3';
import * as v from 'valibot';
import { errors } from '../../../errors.ts';
import { isUuid, Uuid } from '../../../schemas.ts';

export const EndpointIdParam = v.pipe(Uuid, v.description('Webhook endpoint id from `POST /webhooks`.'));
export const DeliveryIdParam = v.pipe(Uuid, v.description('Delivery id (`id`, not `webhookId`) from `GET /webhooks/{id}/deliveries`.'));

export function endpointId(event: H3Event): string {
  const id = getRouterParam(event, 'id');
  if (!isUuid(id)) throw errors.invalid('id: must be a uuid');
  return id.toLowerCase();
}

export function deliveryId(event: H3Event): string {
  const id = getRouterParam(event, 'deliveryId');
  if (!isUuid(id)) throw errors.invalid('deliveryId: must be a uuid');
  return id.toLowerCase();
}
