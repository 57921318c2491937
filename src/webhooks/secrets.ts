// Webhook signing secrets: generated (`whsec_` + base64 of 32 random bytes), kept encrypted at rest
// (AES-256-GCM under a key derived from the server's URL-signing secret), and Standard Webhooks
// signatures over "{id}.{timestamp}.{body}". A secret leaves the service only in the answer of
// create and rotate; it is never logged.

import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import type { Context } from '../context.ts';
import { signingKey } from '../internal/signing.ts';

export const SECRET_PREFIX = 'whsec_';

/** 32 random bytes and their `whsec_` form (what the receiver configures). */
export function generateSecret(): { raw: Buffer; text: string } {
  const raw = randomBytes(32);
  return { raw, text: SECRET_PREFIX + raw.toString('base64') };
}

const keys = new WeakMap<object, Promise<Buffer>>();

/**
 * The encryption key: HKDF over KILN_URL_SIGNING_SECRET (or the generated secret the database
 * keeps for every process), so every API and worker process derives the same key and nothing
 * new has to be configured. Changing KILN_URL_SIGNING_SECRET makes stored webhook secrets
 * unreadable: rotate every endpoint's secret after changing it (docs/webhooks.md).
 */
function encryptionKey(ctx: Context): Promise<Buffer> {
  let k = keys.get(ctx.config);
  if (!k) {
    k = signingKey(ctx).then((s) => Buffer.from(hkdfSync('sha256', s, 'kiln', 'webhook-secrets/v1', 32)));
    k.catch(() => keys.delete(ctx.config));
    keys.set(ctx.config, k);
  }
  return k;
}

/** iv (12) ‖ tag (16) ‖ ciphertext. */
export async function encryptSecret(ctx: Context, raw: Buffer): Promise<Buffer> {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', await encryptionKey(ctx), iv);
  const body = Buffer.concat([c.update(raw), c.final()]);
  return Buffer.concat([iv, c.getAuthTag(), body]);
}

export async function decryptSecret(ctx: Context, enc: Buffer): Promise<Buffer> {
  const d = createDecipheriv('aes-256-gcm', await encryptionKey(ctx), enc.subarray(0, 12));
  d.setAuthTag(enc.subarray(12, 28));
  return Buffer.concat([d.update(enc.subarray(28)), d.final()]);
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
