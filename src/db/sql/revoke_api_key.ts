// kiln.revoke_api_key: revokes a key (idempotent).

import type { Queryable } from '../pool.ts';
import type { ApiKeyRow } from './create_api_key.ts';

export function revokeApiKey(sql: Queryable, keyId: string) {
  return sql<ApiKeyRow[]>`select * from kiln.revoke_api_key(${keyId}::uuid)`;
}
