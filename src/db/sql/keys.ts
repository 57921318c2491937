// kiln.list_keys, kiln.get_key, kiln.create_key, kiln.rotate_key, kiln.revoke_key: the keys of a
// billing scope, managed by its own keys and sessions (the `keys` scope), each only by a caller
// holding every scope of it (docs/security.md#api-keys). Secrets are never stored: only hashes.

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';

/** A key as kiln_private.key_json renders it (never its hash or secret). */
export interface KeyJson {
  id: string;
  name: string | null;
  prefix: string;
  scopes: string[];
  rpm: number | null;
  workspaceId: string | null;
  budgetMicros: number | null;
  usedMicros: number;
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  /** Its requests that spend must name an endUser (docs/api.md, "Attribution"). */
  requireEndUser: boolean;
  /** The current secret (while the key is live) and the older ones still in their grace. */
  liveSecrets: number;
  /** When the last older secret stops working; null when none does. */
  graceEndsAt: string | null;
}

export function listKeys(sql: Queryable, accountId: string, workspaceId: string | null) {
  return sql<Array<{ k: { data: KeyJson[] } }>>`select kiln.list_keys(${accountId}::uuid, ${workspaceId}::uuid) as k`;
}

export function createKey(sql: Queryable, accountId: string, workspaceId: string | null, callerScopes: string[], hash: Buffer, prefix: string,
  name: string | null, scopes: string[], rpm: number | null, budgetMicros: number | string | null, expiresAt: string | null, requireEndUser = false) {
  return sql<Array<{ k: KeyJson }>>`select kiln.create_key(${accountId}::uuid, ${workspaceId}::uuid,
    ${pgArray(sql, callerScopes, ARRAY_OID.text)}, ${hash}::bytea, ${prefix}::text, ${name}::text,
    ${pgArray(sql, scopes, ARRAY_OID.text)}, ${rpm}::int, ${budgetMicros}::bigint, ${expiresAt}::timestamptz, ${requireEndUser}::boolean) as k`;
}

export function getKey(sql: Queryable, accountId: string, workspaceId: string | null, callerScopes: string[], keyId: string) {
  return sql<Array<{ k: KeyJson }>>`select kiln.get_key(${accountId}::uuid, ${workspaceId}::uuid,
    ${pgArray(sql, callerScopes, ARRAY_OID.text)}, ${keyId}::uuid) as k`;
}

export function rotateKey(sql: Queryable, accountId: string, workspaceId: string | null, callerScopes: string[], keyId: string, hash: Buffer, prefix: string, graceSeconds: number) {
  return sql<Array<{ k: KeyJson }>>`select kiln.rotate_key(${accountId}::uuid, ${workspaceId}::uuid,
    ${pgArray(sql, callerScopes, ARRAY_OID.text)}, ${keyId}::uuid, ${hash}::bytea, ${prefix}::text, ${graceSeconds}::int) as k`;
}

export function revokeKey(sql: Queryable, accountId: string, workspaceId: string | null, callerScopes: string[], keyId: string) {
  return sql<Array<{ k: KeyJson }>>`select kiln.revoke_key(${accountId}::uuid, ${workspaceId}::uuid,
    ${pgArray(sql, callerScopes, ARRAY_OID.text)}, ${keyId}::uuid) as k`;
}

/** Whether a key was given a scope, whatever its user may use (the admin routes' refusal says why). */
export function keyCarriesScope(sql: Queryable, keyId: string, scope: string) {
  return sql<Array<{ carries: boolean }>>`select kiln.key_carries_scope(${keyId}::uuid, ${scope}::text) as carries`;
}

/** Housekeeping: key.expired audit entries for keys whose expiry passed (up to 1,000 a call). */
export function recordKeyExpiries(sql: Queryable) {
  return sql<Array<{ n: number }>>`select kiln.record_key_expiries() as n`;
}
