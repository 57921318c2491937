// API key format and hashing. Keys are `kiln_live_` + 40 base62 characters; only SHA-256 is stored.
// No HTTP here (the CLI makes keys with it): auth/session-cookie.ts reads the session cookie.

import { createHash, randomInt } from 'node:crypto';

export const KEY_PREFIX = 'kiln_live_';
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_RE = /^kiln_live_[0-9A-Za-z]{32,64}$/;

export function generateKey(): { key: string; hash: Buffer; displayPrefix: string } {
  let body = '';
  for (let i = 0; i < 40; i++) body += ALPHABET[randomInt(ALPHABET.length)];
  const key = KEY_PREFIX + body;
  return { key, hash: hashKey(key), displayPrefix: key.slice(0, KEY_PREFIX.length + 4) };
}

/** The console session cookie: an opaque secret made at SSO sign-in; only its SHA-256 is stored. */
export const SESSION_COOKIE = 'kiln_session';
export const SESSION_PREFIX = 'kiln_sess_';
const SESSION_RE = /^kiln_sess_[0-9A-Za-z]{40}$/;

/** A new session secret (the cookie's value), its hash and the prefix shown for it. */
export function generateSessionSecret(): { secret: string; hash: Buffer; displayPrefix: string } {
  let body = '';
  for (let i = 0; i < 40; i++) body += ALPHABET[randomInt(ALPHABET.length)];
  const secret = SESSION_PREFIX + body;
  return { secret, hash: hashKey(secret), displayPrefix: secret.slice(0, SESSION_PREFIX.length + 4) };
}

/** Whether a value has the form of a session secret. */
export function isSessionSecret(value: string | undefined): value is string {
  return value !== undefined && SESSION_RE.test(value);
}

export function hashKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

/** The key from an Authorization header, or null when missing or malformed. */
export function bearerKey(header: string | null | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  if (!m || !KEY_RE.test(m[1])) return null;
  return m[1];
}
