// One run of the webhook__deliver task: read what the attempt needs (a stale job finds nothing),
// render the message once (stored with the event), sign it with the endpoint's secret(s), POST
// it, and record the outcome, which schedules the next attempt in the same transaction.

import type { Context } from '../context.ts';
import { beginWebhookAttempt } from '../db/sql/begin_webhook_attempt.ts';
import { recordWebhookAttempt } from '../db/sql/record_webhook_attempt.ts';
import { eventBody } from '../events/body.ts';
import { webhookId } from '../events/ids.ts';
import { attemptDelivery } from './attempt.ts';
import { decryptSecret, signedHeaders } from './secrets.ts';
import { DISABLE_AFTER_SECONDS } from './service.ts';
import { countWebhook } from '../telemetry/metrics.ts';
import { contextFrom, failSpan, SpanKind, tracingOn, withSpan } from '../telemetry/tracing.ts';
import { underSpan } from '../telemetry/scope.ts';
import { eventTraceparent } from '../db/sql/event_traceparent.ts';

export interface DeliverJob {
  /** Delivery id (one per event and endpoint; the message's webhook-id is the event's, events/ids.ts). */
  d: string;
  /** The delivery's round (a redeliver starts a new one) and try within it: a job of another is stale. */
  r: number;
  n: number;
}

/** Only tests set this: a CA for self-signed https receivers. */
export const testHooks: { ca?: string | Buffer } = {};

export async function deliver(base: Context, job: DeliverJob): Promise<string> {
  const [row] = await beginWebhookAttempt(base.sql, job.d, job.r, job.n);
  const a = row?.a;
  if (!a) return 'stale';
  // With tracing on, the delivery joins the trace of the request behind its event.
  const parent = tracingOn() ? contextFrom(await eventTraceparent(base.sql, a.event.id).then(([r]) => r?.tp, () => undefined)) : undefined;
  return withSpan('webhook__deliver', { kind: SpanKind.CLIENT, parent, attributes: { 'kiln.job.task': 'webhook__deliver', 'kiln.webhook.try': job.n, 'kiln.event.type': a.event.type } }, async (span) => {
    // The attempt's queries and log lines belong to the delivery's span.
    const ctx = underSpan(base, span);
    const body = await eventBody(ctx, a.event);
    const secrets = [await decryptSecret(ctx, Buffer.from(a.secret, 'base64'))];
    if (a.oldSecret) secrets.push(await decryptSecret(ctx, Buffer.from(a.oldSecret, 'base64')));
    const outcome = await attemptDelivery(a.url, signedHeaders(secrets, webhookId(a.event.id), body), body, {
      timeoutMs: ctx.config.webhookTimeoutMs,
      allowPrivate: ctx.config.webhookAllowPrivate,
      ca: testHooks.ca,
    });
    const [rec] = await recordWebhookAttempt(ctx.sql, a.id, job.r, job.n, outcome, ctx.config.webhookRetrySchedule, DISABLE_AFTER_SECONDS);
    if (outcome.errorClass) ctx.log.debug('webhook attempt failed', { delivery: a.id, endpoint: a.endpointId, error: outcome.errorClass, status: outcome.statusCode ?? undefined });
    // The receiver's URL is the client's: the span names its answer, never where it went.
    if (outcome.statusCode !== null) span?.setAttribute('http.response.status_code', outcome.statusCode);
    const status = rec?.r.status ?? 'gone';
    if (outcome.errorClass) {
      failSpan(span, null, outcome.errorClass);
      countWebhook('failed_attempt');
      if (rec?.r.disabled) countWebhook('disabled');
    } else if (status === 'delivered') {
      countWebhook('delivered');
    }
    span?.setAttribute('kiln.outcome', status);
    return status;
  });
}
