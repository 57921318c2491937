// kiln.list_keys, kiln.create_key, kiln.rotate_key, kiln.revoke_key: the keys of a billing scope,
// managed by its own keys and sessions (the `keys` scope). Secrets are never stored: only hashes.

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
}

export function listKeys(sql: Queryable, accountId: string, workspaceId: string | null) {
  return sql<Array<{ k: { data: KeyJson[] } }>>`select kiln.list_keys(${accountId}::uuid, ${workspaceId}::uuid) as k`;
}

export function createKey(sql: Queryable, accountId: string, workspaceId: string | null, callerScopes: string[], hash: Buffer, prefix: string,
  name: string | null, scopes: string[], rpm: number | null, budgetMicros: number | string | null, expiresAt: string | null) {
  return sql<Array<{ k: KeyJson }>>`select kiln.create_key(${accountId}::uuid, ${workspaceId}::uuid,
    ${pgArray(sql, callerScopes, ARRAY_OID.text)}, ${hash}::bytea, ${prefix}::text, ${name}::text,
    ${pgArray(sql, scopes, ARRAY_OID.text)}, ${rpm}::int, ${budgetMicros}::bigint, ${expiresAt}::timestamptz) as k`;
}

export function rotateKey(sql: Queryable, accountId: string, workspaceId: string | null, keyId: string, hash: Buffer, prefix: string, graceSeconds: number) {
  return sql<Array<{ k: KeyJson }>>`select kiln.rotate_key(${accountId}::uuid, ${workspaceId}::uuid, ${keyId}::uuid,
    ${hash}::bytea, ${prefix}::text, ${graceSeconds}::int) as k`;
}

export function revokeKey(sql: Queryable, accountId: string, workspaceId: string | null, keyId: string) {
  return sql<Array<{ k: KeyJson }>>`select kiln.revoke_key(${accountId}::uuid, ${workspaceId}::uuid, ${keyId}::uuid) as k`;
}

/** Housekeeping: key.expired audit entries for keys whose expiry passed (up to 1,000 a call). */
export function recordKeyExpiries(sql: Queryable) {
  return sql<Array<{ n: number }>>`select kiln.record_key_expiries() as n`;
}
