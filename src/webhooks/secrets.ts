// Webhook signing secrets: generated (`whsec_` + base64 of 32 random bytes), kept encrypted at rest
// (AES-256-GCM under a key derived from the server's URL-signing secret), and Standard Webhooks
// signatures over "{id}.{timestamp}.{body}". A secret leaves the service only in the answer of
// create and rotate; it is never logged.

import { createHmac, randomBytes } from 'node:crypto';
import type { Context } from '../context.ts';
import { seal, unseal } from '../internal/sealed.ts';

export const SECRET_PREFIX = 'whsec_';

/** 32 random bytes and their `whsec_` form (what the receiver configures). */
export function generateSecret(): { raw: Buffer; text: string } {
  const raw = randomBytes(32);
  return { raw, text: SECRET_PREFIX + raw.toString('base64') };
}

/**
 * Webhook secrets are kept sealed (internal/sealed.ts) under the key derived for
 * 'webhook-secrets/v1' from KILN_URL_SIGNING_SECRET (or the generated secret the database keeps for
 * every process). Changing KILN_URL_SIGNING_SECRET makes stored webhook secrets unreadable: rotate
 * every endpoint's secret after changing it (docs/webhooks.md).
 */
export function encryptSecret(ctx: Context, raw: Buffer): Promise<Buffer> {
  return seal(ctx, 'webhook-secrets/v1', raw);
}

export function decryptSecret(ctx: Context, enc: Buffer): Promise<Buffer> {
  return unseal(ctx, 'webhook-secrets/v1', enc);
}

/** One `v1,<base64>` signature (Standard Webhooks). */
export function sign(raw: Buffer, id: string, timestamp: number, body: string): string {
  return 'v1,' + createHmac('sha256', raw).update(`${id}.${timestamp}.${body}`).digest('base64');
}

/** The headers of one attempt: every given secret signs (space-separated during a rotation's overlap). */
export function signedHeaders(secrets: Buffer[], id: string, body: string, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => sign(s, id, timestamp, body)).join(' '),
  };
}
