// kiln.create_generations: create_generation for a batch of already-authorized callers (reserve,
// insert, enqueue in one transaction, claiming their Idempotency-Keys); each row holds its id or
// its own error.

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';

// Element types for sql.array: postgres.js cannot infer them from nulls.
const TEXT = 25, INT8 = 20, INT4 = 23, UUID = 2950;

export interface CreateGenerationsRow {
  ord: number;
  id: string | null;
  error_code: string | null;
  error_message: string | null;
  /** The id is the stored answer of an earlier request with the same key and body. */
  replayed: boolean;
}

export interface CreateGenerationsColumns {
  accountIds: string[];
  keyIds: Array<string | null>;
  workspaceIds: Array<string | null>;
  origins: string[];
  types: string[];
  modelIds: string[];
  modelVersions: string[];
  /** JSON text of each stored request. */
  requests: string[];
  reserves: string[];
  maxAttempts: number[];
  /** Each request's Idempotency-Key (null: none), or null when no request has one. */
  idemKeys: Array<string | null> | null;
  fingerprints: Array<Uint8Array | null> | null;
  idemTtlSeconds: number;
}

export function createGenerations(sql: Queryable, c: CreateGenerationsColumns) {
  return sql<CreateGenerationsRow[]>`select * from kiln.create_generations(
    ${sql.array(c.accountIds, UUID)}, ${sql.array(c.keyIds, UUID)}, ${sql.array(c.workspaceIds, UUID)},
    ${sql.array(c.origins, TEXT)}, ${sql.array(c.types, TEXT)}, ${sql.array(c.modelIds, TEXT)},
    ${sql.array(c.modelVersions, INT8)}, ${sql.array(c.requests, TEXT)}::jsonb[],
    ${sql.array(c.reserves, INT8)}, ${sql.array(c.maxAttempts, INT4)},
    ${c.idemKeys ? pgArray(sql, c.idemKeys, ARRAY_OID.text) : null}::text[],
    ${c.fingerprints ? pgArray(sql, c.fingerprints, ARRAY_OID.bytea) : null}::bytea[], ${c.idemTtlSeconds}::int)`;
}
