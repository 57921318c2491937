// Key and audit schemas: request bodies (validated with parseWith), response bodies — the single
// source for REST, OpenAPI and the typed client.

import * as v from 'valibot';
import { KEY_SCOPES } from '../auth/access.ts';
import { registerSchemas, Uuid } from '../schemas.ts';

export { KEY_SCOPES };

export const MAX_GRACE_SECONDS = 7 * 86_400;
export const DEFAULT_GRACE_SECONDS = 86_400;

const dateTime = v.pipe(v.string(), v.isoTimestamp());
const micros = v.pipe(v.number(), v.integer(), v.minValue(0, 'must be at least 0'), v.maxValue(Number.MAX_SAFE_INTEGER, 'is too large'));

const KeyScope = v.picklist(KEY_SCOPES, `must be one of ${KEY_SCOPES.join(', ')}`);

export const CreateKeyRequest = v.object({
  name: v.pipe(v.string(), v.minLength(1, 'is required'), v.maxLength(200, 'must be at most 200 characters'), v.description('What the key is for.')),
  scopes: v.pipe(v.array(KeyScope), v.minLength(1, 'must name at least one scope'), v.maxLength(16, 'lists too many scopes'),
    v.description('Any of `read`, `write` (implies read), `keys` (manage this scope\'s keys, read its audit log) and `admin` (admins only). Never more than the creator\'s own.')),
  rpm: v.optional(v.nullable(v.pipe(v.number(), v.integer(), v.minValue(1, 'must be at least 1'), v.maxValue(1_000_000, 'must be at most 1000000'),
    v.description('The key\'s own requests per minute on every endpoint; omitted = the endpoint limits only.')))),
  budgetMicros: v.optional(v.nullable(v.pipe(micros, v.description('The key\'s own budget per billing period of its scope, in microdollars: a generation needs room in both this and the pool. Omitted = the pool\'s alone.')))),
  expiresAt: v.optional(v.nullable(v.pipe(dateTime, v.description('After this time the key gets the same 401 as an unknown key. Omitted = never.')))),
  requireEndUser: v.optional(v.pipe(v.boolean('must be true or false'), v.description('Every request of this key that spends (`POST /generations`, runs, batch lines) must name an `endUser`, else 400 `invalid_request` (docs: Attribution). Default false.'))),
});

export const RotateKeyRequest = v.object({
  graceSeconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0, 'must be at least 0'), v.maxValue(MAX_GRACE_SECONDS, `must be at most ${MAX_GRACE_SECONDS} (7 days)`),
    v.description('How long the previous secret keeps working (0 to 7 days; default 86400, a day). Then it gets the same 401 as an unknown key. Any older secret still in the grace of an earlier rotation ends at once.'))),
});

export const Key = v.object({
  id: v.pipe(Uuid, v.description('Stable across rotations.')),
  name: v.nullable(v.string()),
  prefix: v.pipe(v.string(), v.description('The first characters of the current secret, to tell keys apart.')),
  scopes: v.array(KeyScope),
  rpm: v.nullable(v.pipe(v.number(), v.integer())),
  workspaceId: v.pipe(v.nullable(Uuid), v.description('The Team workspace it bills; null = personal.')),
  budgetMicros: v.pipe(v.nullable(v.pipe(v.number(), v.integer())), v.description('Its own budget per period; null = none.')),
  usedMicros: v.pipe(v.number(), v.integer(), v.description('Spent and held this period of its scope.')),
  createdAt: dateTime,
  lastUsedAt: v.pipe(v.nullable(dateTime), v.description('Last authenticated use, to the minute.')),
  expiresAt: v.nullable(dateTime),
  revokedAt: v.nullable(dateTime),
  requireEndUser: v.pipe(v.boolean(), v.description('Its requests that spend must name an `endUser` (`POST /keys` `requireEndUser`).')),
  liveSecrets: v.pipe(v.number(), v.integer(), v.description('How many secrets of the key work now: the current one (while the key is neither revoked nor expired) plus the one the last rotation replaced while its grace lasts. 0 once revoked or expired.')),
  graceEndsAt: v.pipe(v.nullable(dateTime), v.description('When the older secret a rotation replaced stops working (rounded up to the second); null when no older secret works.')),
});

export const KeyWithSecret = v.object({
  ...Key.entries,
  key: v.pipe(v.string(), v.description('The secret, shown this once: store it now. Only its hash is kept.')),
});

export const KeyList = v.object({ data: v.array(Key) });

export const AuditEntry = v.object({
  id: Uuid,
  at: dateTime,
  actor: v.object({
    type: v.pipe(v.picklist(['key', 'session', 'operator', 'identity']),
      v.description('key: an API key; session: a console session; operator: the operator\'s CLI or SQL; identity: an OIDC identity (an MCP client, an SSO sign-in, an automatic link).')),
    id: v.pipe(v.nullable(v.string()), v.description('The key or session id, the identity\'s account (MCP tool calls) or its issuer and subject separated by a space (a sign-in, an automatic link), or the operator\'s database user.')),
  }),
  action: v.pipe(v.string(), v.description('Noun, then verb in the past tense: `key.created`, `key.rotated`, `key.revoked`, `key.expired`, `webhook.deleted`, `session.created`, `session.refused`, `account.updated`, `identity.linked`, `identity.unlinked`, … (all listed in docs/security.md)')),
  target: v.object({ type: v.string(), id: v.nullable(v.string()) }),
  ip: v.nullable(v.string()),
  requestId: v.pipe(v.nullable(v.string()), v.description('The X-Request-ID of the request that made the change.')),
  details: v.pipe(v.record(v.string(), v.unknown()), v.description('What changed (never a secret).')),
});

export const AuditPage = v.object({
  data: v.array(AuditEntry),
  nextCursor: v.pipe(v.nullable(v.string()), v.description('Pass as `cursor` for the next (older) page; null on the last.')),
});

registerSchemas({ Key, KeyWithSecret, KeyList, AuditEntry, AuditPage });
