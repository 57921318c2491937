// kiln.start_generations: POST /generations for a batch — authenticates each key and reserves,
// inserts and enqueues its generation, in one transaction, claiming the requests' Idempotency-Keys.

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';

export interface StartGenerationsRow {
  ord: number;
  status: string;
  key_id: string | null;
  account_id: string | null;
  workspace_id: string | null;
  retry_after: number | null;
  id: string | null;
  error_code: string | null;
  error_message: string | null;
  /** The id is the stored answer of an earlier request with the same key and body. */
  replayed: boolean;
}

export interface StartGenerationsColumns {
  keyHashes: Uint8Array[];
  origin: string;
  types: string[];
  modelIds: string[];
  modelVersions: string[];
  /** JSON text of each stored request. */
  requests: string[];
  reserves: number[];
  maxAttempts: number;
  /** Each request's Idempotency-Key (null: none), or null when no request has one (the unkeyed path). */
  idemKeys: Array<string | null> | null;
  /** SHA-256 of each keyed request's canonical form. */
  fingerprints: Array<Uint8Array | null> | null;
  idemTtlSeconds: number;
}

export function startGenerations(sql: Queryable, c: StartGenerationsColumns) {
  return sql<StartGenerationsRow[]>`select * from kiln.start_generations(
    ${pgArray(sql, c.keyHashes, ARRAY_OID.bytea)}, ${c.origin}, ${pgArray(sql, c.types, ARRAY_OID.text)},
    ${pgArray(sql, c.modelIds, ARRAY_OID.text)}, ${pgArray(sql, c.modelVersions, ARRAY_OID.int8)},
    ${pgArray(sql, c.requests, ARRAY_OID.text)}::jsonb[],
    ${pgArray(sql, c.reserves, ARRAY_OID.int8)}, ${c.maxAttempts}::int,
    ${c.idemKeys ? pgArray(sql, c.idemKeys, ARRAY_OID.text) : null}::text[],
    ${c.fingerprints ? pgArray(sql, c.fingerprints, ARRAY_OID.bytea) : null}::bytea[], ${c.idemTtlSeconds}::int)`;
}
