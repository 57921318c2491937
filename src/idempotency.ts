// Idempotency-Key (IETF draft "The Idempotency-Key HTTP Header Field"): the key's rules, the
// MCP argument built from the same schema, and the fingerprint a repeat is compared with.
// http/idempotency-header.ts reads the header; services only see the resulting claim.

import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { errors } from './errors.ts';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
/** Response header of an answer replayed from an earlier request with the same key. */
export const REPLAYED_HEADER = 'idempotent-replayed';

const KEY_RE = /^[\x20-\x7E]{1,255}$/;
const KEY_RULE = '1 to 255 printable ASCII characters (0x20–0x7E)';

/** The key's schema, shared by the OpenAPI header parameter and the MCP `idempotencyKey` argument. */
export const IdempotencyKeySchema = v.pipe(
  v.string(),
  v.regex(KEY_RE, `must be ${KEY_RULE}`),
  v.description(
    `${KEY_RULE}, unique per request you mean to make once, e.g. a UUID. The first accepted request with a key is kept ` +
    `for KILN_IDEMPOTENCY_TTL_SECONDS (default 24 h) per account and operation; a repeat with the same key and body ` +
    'answers the same id (header `idempotent-replayed: true`) and starts nothing new; another body with that key is a 422 `idempotency_conflict`. ' +
    'Refused requests (400, 401, 402, 403, 429, 503) are not kept: retry them with the same key.',
  ),
);

/** What a keyed request is claimed with: the key and the SHA-256 of the request's canonical form. */
export interface Idempotency {
  key: string;
  fingerprint: Buffer;
}

/** Checks a key (header or MCP argument); a bad one is a 400 naming `name`. */
export function checkIdempotencyKey(name: string, raw: string): string {
  if (!KEY_RE.test(raw)) throw errors.invalid(`${name}: must be ${KEY_RULE}`);
  return raw;
}

/**
 * The fingerprint of a request: SHA-256 over its parsed JSON re-serialised with object keys in
 * sorted order (arrays keep theirs), so spacing and key order do not matter but every value
 * does — an omitted field and the same field set to its default are different requests.
 */
export function fingerprint(value: unknown): Buffer {
  return createHash('sha256').update(canonicalJson(value)).digest();
}

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((x) => canonicalJson(x === undefined ? null : x)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).filter((k) => (value as Record<string, unknown>)[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** The claim of a keyed request (null without a key). */
export function idempotencyOf(key: string | null, request: unknown): Idempotency | null {
  return key === null ? null : { key, fingerprint: fingerprint(request) };
}
