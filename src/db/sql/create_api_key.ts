// kiln.create_api_key: stores a new key's hash (the key itself is never stored).

import type { Queryable } from '../pool.ts';

export interface ApiKeyRow {
  id: string;
  account_id: string;
  key_hash: Uint8Array;
  display_prefix: string;
  scopes: string[];
  rpm: number | null;
  workspace_id: string | null;
  name: string | null;
  created_at: Date;
  revoked_at: Date | null;
}

export function createApiKey(
  sql: Queryable, accountId: string, keyHash: Uint8Array, displayPrefix: string, scopes: string[], rpm: number | null, workspaceId: string | null, name: string | null,
) {
  return sql<ApiKeyRow[]>`select * from kiln.create_api_key(${accountId}::uuid, ${keyHash}, ${displayPrefix}, ${scopes}::text[], ${rpm}::int, ${workspaceId}::uuid, ${name})`;
}
