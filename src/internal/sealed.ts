// Sealing with the server's signing secret: AES-256-GCM under a key derived from it by HKDF-SHA256
// (salt 'kiln', info naming the use and its version), so every API and worker process derives the
// same key and nothing new has to be configured. A sealed value is iv (12) ‖ tag (16) ‖
// ciphertext. Used for webhook secrets at rest (webhooks/secrets.ts) and the SSO transaction
// cookie (auth/sso.ts), each under its own info. Changing KILN_URL_SIGNING_SECRET makes what was
// sealed before unreadable (docs/webhooks.md).

import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { Context } from '../context.ts';
import { signingKey } from './signing.ts';

/** The HKDF info of each use: a new use (or a new version of one) gets a new name. */
export type SealedUse = 'webhook-secrets/v1' | 'sso-transaction/v1';

/** iv + tag: the shortest sealed value (of an empty message). */
export const SEALED_OVERHEAD = 12 + 16;

const keys = new Map<SealedUse, WeakMap<object, Promise<Buffer>>>();

/** The key of one use, derived once per configuration (a failed read of the secret is tried again). */
function sealingKey(ctx: Pick<Context, 'sql' | 'config'>, use: SealedUse): Promise<Buffer> {
  let perConfig = keys.get(use);
  if (!perConfig) keys.set(use, perConfig = new WeakMap());
  let k = perConfig.get(ctx.config);
  if (!k) {
    k = signingKey(ctx).then((s) => Buffer.from(hkdfSync('sha256', s, 'kiln', use, 32)));
    k.catch(() => perConfig.delete(ctx.config));
    perConfig.set(ctx.config, k);
  }
  return k;
}

/** `plain` sealed for `use`: iv (12, random) ‖ tag (16) ‖ ciphertext. */
export async function seal(ctx: Pick<Context, 'sql' | 'config'>, use: SealedUse, plain: Buffer): Promise<Buffer> {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', await sealingKey(ctx, use), iv);
  const body = Buffer.concat([c.update(plain), c.final()]);
  return Buffer.concat([iv, c.getAuthTag(), body]);
}

/** What `seal` sealed for `use`; throws when the value was altered, is too short or was sealed for another use or secret. */
export async function unseal(ctx: Pick<Context, 'sql' | 'config'>, use: SealedUse, sealed: Buffer): Promise<Buffer> {
  const d = createDecipheriv('aes-256-gcm', await sealingKey(ctx, use), sealed.subarray(0, 12));
  d.setAuthTag(sealed.subarray(12, SEALED_OVERHEAD));
  return Buffer.concat([d.update(sealed.subarray(SEALED_OVERHEAD)), d.final()]);
}
