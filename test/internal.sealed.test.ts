// internal/sealed.ts, the one home of AES-256-GCM under an HKDF key of the signing secret: values
// sealed before it existed (webhook secrets at rest, SSO transaction cookies) still open, what it
// seals opens with the former layout (iv ‖ tag ‖ ciphertext), and one use's value never opens as
// another's or after a change.

import assert from 'node:assert/strict';
import { createDecipheriv, hkdfSync } from 'node:crypto';
import { test } from 'node:test';
import { completeSignIn, type SsoConfig } from '../src/auth/sso.ts';
import type { Context } from '../src/context.ts';
import { seal, unseal } from '../src/internal/sealed.ts';
import { decryptSecret, encryptSecret } from '../src/webhooks/secrets.ts';

const SECRET = 'an old deployment\'s signing secret';
const ctx = { config: { urlSigningSecret: SECRET }, log: { info() {}, warn() {} } } as unknown as Context;

// Made by the code before internal/sealed.ts (webhooks/secrets.ts encryptSecret and auth/sso.ts's
// transaction cookie), under KILN_URL_SIGNING_SECRET = SECRET.
const OLD_WEBHOOK_SECRET = Buffer.from(
  '857065c3ad462469fe57231f784d016702f8f622e798c8c5395f05cfd117e02633ecdffe37fd0308047f0f3e0dbaf147ffa77002c8f3aeac168959d5', 'hex');
const OLD_TRANSACTION_COOKIE = 'pa6nx8_njzZSxLFRVW8OM8s3a0RdfwZq5rFQOHQQ4qwFeUwhBCnVFVaXGTyIoYdoEkjOiKzrs-l8-yGSLBrcSY07djuq95m7QTBAZkUkCC-ucLiKrj_OdwM';

/** The former decryption, written out: HKDF-SHA256(secret, salt 'kiln', info), AES-256-GCM, iv ‖ tag ‖ ciphertext. */
function formerOpen(info: string, sealed: Buffer): Buffer {
  const key = Buffer.from(hkdfSync('sha256', Buffer.from(SECRET, 'utf8'), 'kiln', info, 32));
  const d = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12));
  d.setAuthTag(sealed.subarray(12, 28));
  return Buffer.concat([d.update(sealed.subarray(28)), d.final()]);
}

test('a webhook secret sealed by the former code opens, and one sealed now opens as before', async () => {
  assert.equal((await decryptSecret(ctx, OLD_WEBHOOK_SECRET)).toString(), 'whsec-raw-32-bytes-of-a-secret!!');
  assert.equal((await unseal(ctx, 'webhook-secrets/v1', OLD_WEBHOOK_SECRET)).toString(), 'whsec-raw-32-bytes-of-a-secret!!');
  const raw = Buffer.from('0123456789abcdef0123456789abcdef');
  const sealed = await encryptSecret(ctx, raw);
  assert.equal(sealed.length, 12 + 16 + raw.length);
  assert.deepEqual(formerOpen('webhook-secrets/v1', sealed), raw);
  assert.notDeepEqual((await encryptSecret(ctx, raw)).subarray(0, 12), sealed.subarray(0, 12), 'a fresh iv each time');
});

test('an SSO transaction cookie sealed by the former code opens', async () => {
  const tx = JSON.parse((await unseal(ctx, 'sso-transaction/v1', Buffer.from(OLD_TRANSACTION_COOKIE, 'base64url'))).toString('utf8'));
  assert.deepEqual(tx, { s: 'state-1', n: 'nonce-1', v: 'verifier-1', e: 4102444800 });
  // Through the sign-in itself: the cookie opens and its state matches, so the provider's error is
  // what is reported (before any call to the provider); a cookie that does not open is no transaction.
  const o = { issuer: 'http://127.0.0.1:9/', clientId: 'kiln', scopes: ['openid'] } as unknown as SsoConfig;
  const url = new URL('http://kiln.test/auth/callback?state=state-1&error=access_denied');
  assert.deepEqual(await completeSignIn(ctx, o, url, OLD_TRANSACTION_COOKIE, {}), { outcome: 'invalid', reason: 'provider_error', detail: 'access_denied' });
  const altered = OLD_TRANSACTION_COOKIE.slice(0, -2) + (OLD_TRANSACTION_COOKIE.endsWith('AA') ? 'AB' : 'AA');
  assert.deepEqual(await completeSignIn(ctx, o, url, altered, {}), { outcome: 'invalid', reason: 'no_transaction' });
  const sealedNow = await seal(ctx, 'sso-transaction/v1', Buffer.from('{"s":"x"}'));
  assert.equal(formerOpen('sso-transaction/v1', sealedNow).toString(), '{"s":"x"}');
});

test('a value opens only for its own use, unaltered, under the secret it was sealed with', async () => {
  await assert.rejects(unseal(ctx, 'sso-transaction/v1', OLD_WEBHOOK_SECRET));
  const flipped = Buffer.from(OLD_WEBHOOK_SECRET);
  flipped[flipped.length - 1] ^= 1;
  await assert.rejects(unseal(ctx, 'webhook-secrets/v1', flipped));
  const other = { config: { urlSigningSecret: 'another secret' } } as unknown as Context;
  await assert.rejects(unseal(other, 'webhook-secrets/v1', OLD_WEBHOOK_SECRET));
});
