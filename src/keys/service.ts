// Keys people manage themselves (the `keys` scope), and the audit log of their billing scope.
// Callers are resolved (auth/access.ts) before any of this runs; the SQL decides who sees what.

import type { Caller } from '../auth/access.ts';
import { audited } from '../auth/audit.ts';
import { generateKey } from '../auth/secrets.ts';
import type { Context } from '../context.ts';
import { listAudit, type AuditEntryJson } from '../db/sql/audit.ts';
import { createKey, getKey, listKeys, revokeKey, rotateKey, type KeyJson } from '../db/sql/keys.ts';
import { errors } from '../errors.ts';
import { isUuid, parseWith } from '../schemas.ts';
import { CreateKeyRequest, DEFAULT_GRACE_SECONDS, RotateKeyRequest } from './schemas.ts';

/** GET /keys: every key of the billing scope the caller may see, stronger ones too (nothing in an entry is secret). */
export async function listKeysFor(ctx: Context, caller: Caller): Promise<{ data: KeyJson[] }> {
  const [row] = await listKeys(ctx.sql, caller.accountId, caller.workspaceId);
  return row!.k;
}

/**
 * GET /keys/{id}: one key. Here, in rotation and in revocation the SQL refuses (403 forbidden) a
 * key with a scope the caller lacks (docs/security.md#api-keys); another scope's key is a 404.
 */
export async function getKeyFor(ctx: Context, caller: Caller, id: string): Promise<KeyJson> {
  const [row] = await getKey(ctx.sql, caller.accountId, caller.workspaceId, caller.scopes ?? [], id);
  return row!.k;
}

/** POST /keys: the new key's entry and its secret, shown once. */
export async function createKeyFor(ctx: Context, caller: Caller, input: unknown): Promise<KeyJson & { key: string }> {
  const body = parseWith(CreateKeyRequest, input);
  let expiresAt: string | null = null;
  if (body.expiresAt != null) {
    const at = new Date(body.expiresAt);
    if (Number.isNaN(at.getTime()) || at.getUTCFullYear() > 9999) throw errors.invalid('expiresAt: must be a date-time');
    if (at.getTime() <= Date.now()) throw errors.invalid('expiresAt: must be in the future');
    expiresAt = at.toISOString();
  }
  const { key, hash, displayPrefix } = generateKey();
  const [row] = await audited(ctx, caller, (tx) => createKey(tx, caller.accountId, caller.workspaceId, caller.scopes ?? [], hash, displayPrefix,
    body.name, [...new Set(body.scopes)], body.rpm ?? null, body.budgetMicros ?? null, expiresAt, body.requireEndUser ?? false));
  return { ...row!.k, key };
}

/** POST /keys/{id}/rotate: a new secret under the same id; the previous one works for the grace, older ones end now. */
export async function rotateKeyFor(ctx: Context, caller: Caller, id: string, input: unknown): Promise<KeyJson & { key: string }> {
  const body = parseWith(RotateKeyRequest, input ?? {});
  const { key, hash, displayPrefix } = generateKey();
  const [row] = await audited(ctx, caller, (tx) => rotateKey(tx, caller.accountId, caller.workspaceId, caller.scopes ?? [], id, hash, displayPrefix,
    body.graceSeconds ?? DEFAULT_GRACE_SECONDS));
  return { ...row!.k, key };
}

/** DELETE /keys/{id}: every secret of the key stops working at once. */
export async function revokeKeyFor(ctx: Context, caller: Caller, id: string): Promise<KeyJson> {
  const [row] = await audited(ctx, caller, (tx) => revokeKey(tx, caller.accountId, caller.workspaceId, caller.scopes ?? [], id));
  return row!.k;
}

const ACTION_RE = /^[a-z_]{1,40}\.[a-z_]{1,40}$/;

/** `limit` (1–100, default 50), the previous page's `nextCursor`, and an optional action. */
export function parseAuditQuery(limit: string | undefined, cursor: string | undefined, action: string | undefined) {
  let n = 50;
  if (limit !== undefined) {
    if (!/^\d{1,3}$/.test(limit) || Number(limit) < 1 || Number(limit) > 100) throw errors.invalid('limit: must be a whole number from 1 to 100');
    n = Number(limit);
  }
  if (cursor !== undefined && !isUuid(cursor)) throw errors.invalid('cursor: must be a nextCursor from a previous page');
  if (action !== undefined && !ACTION_RE.test(action)) throw errors.invalid('action: must be an action name such as key.created');
  return { limit: n, before: cursor?.toLowerCase() ?? null, action: action ?? null };
}

/** GET /audit: the caller's billing scope's entries, newest first. */
export async function listAuditFor(ctx: Context, caller: Caller, q: ReturnType<typeof parseAuditQuery>): Promise<{ data: AuditEntryJson[]; nextCursor: string | null }> {
  const [row] = await listAudit(ctx.sql, caller.workspaceId ?? caller.accountId, q.limit, q.before, q.action);
  return row!.a;
}
