// Path ids of the webhook routes, checked before any SQL (400 naming the bad one).

import { getRouterParam, type H3Event } from 'h3';
import * as v from 'valibot';
import { errors } from '../../../errors.ts';
import { isUuid, Uuid } from '../../../schemas.ts';

export const EndpointIdParam = v.pipe(Uuid, v.description('Webhook endpoint id from `POST /webhooks`.'));

const WEBHOOK_ID = /^msg_(\d{1,19})$/;
const MAX_BIGINT = 2n ** 63n - 1n;

export const DeliveryIdParam = v.pipe(
  v.union([v.pipe(v.string(), v.regex(WEBHOOK_ID)), Uuid]),
  v.description('The message\'s `webhook-id` (`msg_…`): the `id` of a delivery in `GET /webhooks/{id}/deliveries`, and the header the receiver got. A delivery\'s `deliveryId` (a uuid) is accepted too.'),
);

export function endpointId(event: H3Event): string {
  const id = getRouterParam(event, 'id');
  if (!isUuid(id)) throw errors.invalid('id: must be a uuid');
  return id.toLowerCase();
}

/** A delivery as redeliver names it: by its message's webhook-id (the event's id), or by its own uuid. */
export type DeliveryRef = { eventId: string } | { deliveryId: string };

export function deliveryRef(event: H3Event): DeliveryRef {
  const id = getRouterParam(event, 'deliveryId');
  const m = WEBHOOK_ID.exec(id ?? '');
  if (m && BigInt(m[1]!) <= MAX_BIGINT) return { eventId: BigInt(m[1]!).toString() };
  if (isUuid(id)) return { deliveryId: id.toLowerCase() };
  throw errors.invalid('deliveryId: must be a webhook-id (`msg_…`) or a delivery uuid');
}
