// Webhook endpoints of a billing scope (the workspace of a workspace-bound key, else the account)
// and their delivery log. Callers are resolved (auth/access.ts) before any of this runs. A
// workspace's endpoint is changed, deleted or given a new secret only by the member who made it or
// an owner or admin (docs/webhooks.md).

import type { Caller } from '../auth/access.ts';
import { audited } from '../auth/audit.ts';
import type { Context } from '../context.ts';
import { createWebhookEndpoint, type WebhookEndpointJson } from '../db/sql/create_webhook_endpoint.ts';
import { deleteWebhookEndpoint } from '../db/sql/delete_webhook_endpoint.ts';
import { getWebhookEndpoint } from '../db/sql/get_webhook_endpoint.ts';
import { listWebhookDeliveries, type WebhookDeliveryJson } from '../db/sql/list_webhook_deliveries.ts';
import { listWebhookEndpoints } from '../db/sql/list_webhook_endpoints.ts';
import { recoverWebhookDeliveries } from '../db/sql/recover_webhook_deliveries.ts';
import { redeliverWebhook } from '../db/sql/redeliver_webhook.ts';
import { requireWebhookRights } from '../db/sql/require_webhook_rights.ts';
import { redeliverWebhookMessage } from '../db/sql/redeliver_webhook_message.ts';
import { rotateWebhookSecret } from '../db/sql/rotate_webhook_secret.ts';
import { sendWebhookTest } from '../db/sql/send_webhook_test.ts';
import { updateWebhookEndpoint, type WebhookPatch } from '../db/sql/update_webhook_endpoint.ts';
import { errors } from '../errors.ts';
import { webhookId } from '../events/ids.ts';
import { parseWith } from '../schemas.ts';
import { CreateWebhookRequest, EVENT_TYPES, RecoverRequest, UpdateWebhookRequest } from './schemas.ts';
import { encryptSecret, generateSecret } from './secrets.ts';
import { checkEndpointUrl, UrlRefused } from './ssrf.ts';

/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_SECONDS = 24 * 3600;
/** An endpoint with no 2xx for this long while failing is disabled. */
export const DISABLE_AFTER_SECONDS = 5 * 24 * 3600;

/** The billing scope a caller's endpoints and events belong to. */
export function scopeOf(caller: Caller): string {
  return caller.workspaceId ?? caller.accountId;
}

export function endpointBody(e: WebhookEndpointJson) {
  return { ...e, events: e.events ?? [...EVENT_TYPES], description: e.description ?? null };
}

async function checkedUrl(ctx: Context, url: string): Promise<string> {
  try {
    return await checkEndpointUrl(url, ctx.config.webhookAllowPrivate);
  } catch (e) {
    if (e instanceof UrlRefused) throw errors.invalid(e.message);
    throw e;
  }
}

function uniq<T>(xs: T[] | null | undefined): T[] | null | undefined {
  return xs ? [...new Set(xs)] : xs;
}

export async function createEndpoint(ctx: Context, caller: Caller, input: unknown) {
  const body = parseWith(CreateWebhookRequest, input);
  const url = await checkedUrl(ctx, body.url);
  const secret = generateSecret();
  const secretEnc = await encryptSecret(ctx, secret.raw);
  const [row] = await audited(ctx, caller, (tx) => createWebhookEndpoint(tx, caller.accountId, caller.workspaceId, url, uniq(body.events) ?? null,
    body.description ?? null, secretEnc));
  return { ...endpointBody(row!.e), secret: secret.text };
}

export async function listEndpoints(ctx: Context, caller: Caller) {
  const [row] = await listWebhookEndpoints(ctx.sql, scopeOf(caller));
  return { data: (row?.e ?? []).map(endpointBody) };
}

export async function getEndpoint(ctx: Context, caller: Caller, id: string) {
  const [row] = await getWebhookEndpoint(ctx.sql, scopeOf(caller), id);
  if (!row?.e) throw errors.notFound('Webhook endpoint');
  return endpointBody(row.e);
}

export async function updateEndpoint(ctx: Context, caller: Caller, id: string, input: unknown) {
  const body = parseWith(UpdateWebhookRequest, input);
  const patch: WebhookPatch = {};
  if (body.url !== undefined) patch.url = await checkedUrl(ctx, body.url);
  if (body.events !== undefined) patch.events = uniq(body.events) ?? null;
  if (body.description !== undefined) patch.description = body.description;
  if (body.enabled !== undefined) patch.enabled = body.enabled;
  const [row] = await audited(ctx, caller, async (tx) => {
    await requireWebhookRights(tx, caller.accountId, caller.workspaceId, id);
    return updateWebhookEndpoint(tx, scopeOf(caller), id, patch);
  });
  if (!row?.e) throw errors.notFound('Webhook endpoint');
  return endpointBody(row.e);
}

export async function deleteEndpoint(ctx: Context, caller: Caller, id: string) {
  const [row] = await audited(ctx, caller, async (tx) => {
    await requireWebhookRights(tx, caller.accountId, caller.workspaceId, id);
    return deleteWebhookEndpoint(tx, scopeOf(caller), id);
  });
  if (!row?.ok) throw errors.notFound('Webhook endpoint');
}

export async function rotateSecret(ctx: Context, caller: Caller, id: string) {
  const secret = generateSecret();
  const secretEnc = await encryptSecret(ctx, secret.raw);
  const [row] = await audited(ctx, caller, async (tx) => {
    await requireWebhookRights(tx, caller.accountId, caller.workspaceId, id);
    return rotateWebhookSecret(tx, scopeOf(caller), id, secretEnc, ROTATION_OVERLAP_SECONDS);
  });
  if (!row?.ok) throw errors.notFound('Webhook endpoint');
  return { secret: secret.text };
}

const MAX_PAGE = 100;

/** `limit` (1–100, default 20) and the opaque cursor of the previous page. */
export function parseDeliveryPage(limit: string | undefined, cursor: string | undefined): { limit: number; before: { at: string; id: string } | null } {
  let n = 20;
  if (limit !== undefined) {
    if (!/^\d{1,3}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_PAGE) throw errors.invalid(`limit: must be a whole number from 1 to ${MAX_PAGE}`);
    n = Number(limit);
  }
  let before = null;
  if (cursor !== undefined) {
    const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)\|([0-9a-f-]{36})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (!m) throw errors.invalid('cursor: not a cursor from this endpoint');
    before = { at: m[1]!, id: m[2]! };
  }
  return { limit: n, before };
}

export async function listDeliveries(ctx: Context, caller: Caller, id: string, page: ReturnType<typeof parseDeliveryPage>) {
  const [row] = await listWebhookDeliveries(ctx.sql, scopeOf(caller), id, page.limit + 1, page.before);
  if (!row?.d) throw errors.notFound('Webhook endpoint');
  const data = row.d.slice(0, page.limit);
  const last = data[data.length - 1];
  const nextCursor = row.d.length > page.limit && last ? Buffer.from(`${last.createdAt}|${last.id}`).toString('base64url') : null;
  // createdAt carries microseconds for the cursor; the API shows milliseconds like every other timestamp.
  return {
    // `id` is the message's webhook-id, as the receiver got it (docs/webhooks.md); `webhookId` says
    // the same, and `deliveryId` is the delivery row's own uuid.
    data: data.map(({ id, eventId, ...d }: WebhookDeliveryJson) => ({
      id: webhookId(eventId), webhookId: webhookId(eventId), deliveryId: id, ...d, createdAt: d.createdAt.replace(/(\.\d{3})\d{3}Z$/, '$1Z'),
    })),
    nextCursor,
  };
}

/** Sends a delivery's message again, named by its webhook-id's event id or by the delivery's uuid. */
export async function redeliver(ctx: Context, caller: Caller, id: string, delivery: { eventId: string } | { deliveryId: string }) {
  const [row] = 'eventId' in delivery
    ? await redeliverWebhookMessage(ctx.sql, scopeOf(caller), id, delivery.eventId)
    : await redeliverWebhook(ctx.sql, scopeOf(caller), id, delivery.deliveryId);
  if (!row?.ok) throw errors.notFound('Webhook delivery');
}

export async function recover(ctx: Context, caller: Caller, id: string, input: unknown) {
  const { since } = parseWith(RecoverRequest, input);
  const [row] = await recoverWebhookDeliveries(ctx.sql, scopeOf(caller), id, since);
  if (row?.n == null) throw errors.notFound('Webhook endpoint');
  return row.n;
}

export async function sendTest(ctx: Context, caller: Caller, id: string) {
  const [row] = await sendWebhookTest(ctx.sql, scopeOf(caller), id);
  if (!row?.ok) throw errors.notFound('Webhook endpoint');
}
