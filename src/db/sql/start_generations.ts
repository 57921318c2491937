// kiln.start_generations: POST /generations for a batch — authenticates each key and reserves,
// inserts and enqueues its generation, in one transaction.

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
}

export function startGenerations(sql: Queryable, c: StartGenerationsColumns) {
  return sql<StartGenerationsRow[]>`select * from kiln.start_generations(
    ${pgArray(sql, c.keyHashes, ARRAY_OID.bytea)}, ${c.origin}, ${pgArray(sql, c.types, ARRAY_OID.text)},
    ${pgArray(sql, c.modelIds, ARRAY_OID.text)}, ${pgArray(sql, c.modelVersions, ARRAY_OID.int8)},
    ${pgArray(sql, c.requests, ARRAY_OID.text)}::jsonb[],
    ${pgArray(sql, c.reserves, ARRAY_OID.int8)}, ${c.maxAttempts}::int)`;
}
