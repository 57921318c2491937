// Webhook and event schemas: request bodies (validated with parseWith), response bodies and the
// event types — the single source for REST, OpenAPI and the typed client.

import * as v from 'valibot';
import { registerSchemas, Uuid } from '../schemas.ts';

export const EVENT_TYPES = [
  'generation.completed', 'generation.failed',
  'workflow_run.completed', 'workflow_run.failed',
  'budget.threshold', 'webhook.test',
  'workflow.saved', 'workflow.deleted',
  'batch.completed', 'batch.canceled', 'batch.expired',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

const dateTime = v.pipe(v.string(), v.isoTimestamp());

const EventTypeSchema = v.picklist(EVENT_TYPES, `must be one of ${EVENT_TYPES.join(', ')}`);
const EventList = v.pipe(
  v.array(EventTypeSchema),
  v.minLength(1, 'must name at least one event type'),
  v.maxLength(EVENT_TYPES.length * 4, 'lists too many event types'),
  v.description(`Event types to receive: ${EVENT_TYPES.map((t) => `\`${t}\``).join(', ')}. Omitted: every type.`),
);
const UrlField = v.pipe(v.string(), v.minLength(1, 'is required'), v.maxLength(2048, 'must be at most 2048 characters'),
  v.description('Where deliveries are POSTed: https, a public host, no credentials.'));
const Description = v.pipe(v.string(), v.maxLength(500, 'must be at most 500 characters'));

export const CreateWebhookRequest = v.object({
  url: UrlField,
  events: v.optional(EventList),
  description: v.optional(v.nullable(Description)),
});

export const UpdateWebhookRequest = v.object({
  url: v.optional(UrlField),
  events: v.optional(v.nullable(EventList)),
  description: v.optional(v.nullable(Description)),
  enabled: v.optional(v.pipe(v.boolean(), v.description('`true` enables a disabled endpoint again (and clears its failing streak).'))),
});

export const RecoverRequest = v.object({
  since: v.pipe(v.string(), v.isoTimestamp('must be an ISO 8601 timestamp'), v.description('Deliveries that failed at or after this time are sent again.')),
});

export const WebhookEndpoint = v.object({
  id: Uuid,
  url: v.string(),
  events: v.pipe(v.array(EventTypeSchema), v.description('The event types this endpoint receives.')),
  description: v.nullable(v.string()),
  enabled: v.boolean(),
  disabledReason: v.pipe(v.nullable(v.string()), v.description('Why the service disabled it (a 410, or 5 days of failures); null when enabled or disabled by you.')),
  createdAt: dateTime,
});

export const WebhookEndpointWithSecret = v.object({
  ...WebhookEndpoint.entries,
  secret: v.pipe(v.string(), v.description('`whsec_` + base64 of 32 random bytes: the Standard Webhooks signing secret. Shown only here and by rotate-secret.')),
});

export const WebhookEndpointList = v.object({ data: v.array(WebhookEndpoint) });

export const WebhookSecret = v.object({
  secret: v.pipe(v.string(), v.description('The new `whsec_` secret. For 24 h deliveries carry signatures under the new and the old secret.')),
});

export const WebhookDelivery = v.object({
  id: v.pipe(v.string(), v.description('The message\'s `webhook-id` header (`msg_<event id>`): the event\'s, the same at every endpoint, on every attempt and redelivery, and in `kiln listen`\'s forwards. What redeliver takes.')),
  webhookId: v.pipe(v.string(), v.description('The same as `id`: the message\'s `webhook-id` header.')),
  deliveryId: v.pipe(Uuid, v.description('The delivery\'s own id (one event\'s message to this endpoint); redeliver takes it too.')),
  event: EventTypeSchema,
  status: v.picklist(['pending', 'delivered', 'failed']),
  attempts: v.pipe(v.number(), v.integer()),
  lastStatusCode: v.nullable(v.pipe(v.number(), v.integer())),
  lastError: v.pipe(v.nullable(v.string()), v.description('Error class and a short reason of the last failed attempt (`timeout`, `refused`, `tls`, `redirect`, `status`); never a response body.')),
  createdAt: dateTime,
  deliveredAt: v.nullable(dateTime),
  nextAttemptAt: v.pipe(v.nullable(dateTime), v.description('When a pending delivery is attempted next.')),
});

export const WebhookDeliveryList = v.object({
  data: v.array(WebhookDelivery),
  nextCursor: v.pipe(v.nullable(v.string()), v.description('Pass as `cursor` for the next (older) page; null on the last page.')),
});

export const Accepted = v.object({ accepted: v.literal(true) });
export const RecoverAccepted = v.object({ accepted: v.literal(true), count: v.pipe(v.number(), v.integer(), v.description('Deliveries queued again.')) });

export const EventMessage = v.pipe(
  v.object({
    type: EventTypeSchema,
    timestamp: dateTime,
    data: v.pipe(v.unknown(), v.description('For generation.* the `GET /generations/{id}` body; for workflow_run.* the `GET /workflows/{id}/runs/{runId}` body; for budget.threshold `{ scope, workspaceId, threshold, usedMicros, budgetMicros, periodStart, resetsAt }`; for workflow.saved and workflow.deleted the workflow without its graph, `{ id, name, version, createdAt, updatedAt, deletedAt }` (a run writing its results back is not a save: workflow_run.completed tells of it); for batch.* the `GET /batches/{id}` body.')),
  }),
  v.description('The body of every webhook delivery and the `data` of every `GET /events` event.'),
);

export const EventStreamItem = v.pipe(
  v.object({
    event: EventTypeSchema,
    id: v.pipe(v.string(), v.description('`<tx>-<n>`: send it as `Last-Event-ID` to resume after this event.')),
    data: EventMessage,
  }),
  v.description('One event of `GET /events`, its `data` line parsed as JSON: the message a webhook receives for it; `event` is its `type`.'),
);

registerSchemas({ WebhookEndpoint, WebhookEndpointWithSecret, WebhookEndpointList, WebhookSecret, WebhookDelivery, WebhookDeliveryList, EventMessage, EventStreamItem });
