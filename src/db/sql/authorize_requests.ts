// kiln.authorize_requests: a batch of hashed API keys checked for scope and rate limits (the key's
// own rpm and the endpoint bucket), with the usage body of each key's billing scope when asked.

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';

/** What every authorizing call returns for a request (the batched GET reads add their `body`). */
export interface AuthColumns {
  ord: number;
  status: string;
  key_id: string | null;
  account_id: string | null;
  workspace_id: string | null;
  tier: string | null;
  scopes: string[] | null;
  retry_after: number | null;
}

export interface AuthorizeRequestsRow extends AuthColumns {
  usage: string | null;
}

export function authorizeRequests(
  sql: Queryable, keyHashes: Uint8Array[], scopes: string[], buckets: Array<string | null>, bucketRpms: Array<number | null>, withUsage: boolean[],
) {
  return sql<AuthorizeRequestsRow[]>`select * from kiln.authorize_requests(
    ${pgArray(sql, keyHashes, ARRAY_OID.bytea)}, ${pgArray(sql, scopes, ARRAY_OID.text)},
    ${pgArray(sql, buckets, ARRAY_OID.text)}, ${pgArray(sql, bucketRpms, ARRAY_OID.int4)},
    ${pgArray(sql, withUsage, ARRAY_OID.bool)})`;
}
