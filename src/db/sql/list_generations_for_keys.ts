// kiln.list_generations_for_keys: GET /generations for a batch — authorizes each key and reads a
// keyset page of its account's generations in the key's billing scope (body null when not admitted).

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { AuthColumns } from './authorize_requests.ts';
import type { GenerationBody } from './get_generations.ts';

export interface GenerationPage {
  data: GenerationBody[];
  /** Where the next page starts (created_at in epoch microseconds, id); null on the last page. */
  next: { at: string; id: string } | null;
}

export interface ListGenerationsForKeysRow extends AuthColumns {
  body: GenerationPage | null;
}

/** Per request: `beforeAts` and `sinces` are timestamps (ISO text), `statuses` and `types` comma-separated lists; null = none. */
export function listGenerationsForKeys(
  sql: Queryable, keyHashes: Uint8Array[], readRpm: number, origin: string, limits: number[],
  beforeAts: Array<string | null>, beforeIds: Array<string | null>, statuses: Array<string | null>,
  types: Array<string | null>, modelIds: Array<string | null>, sinces: Array<string | null>,
  endUsers: Array<string | null> = [], metadata: Array<Record<string, string> | null> = [],
) {
  return sql<ListGenerationsForKeysRow[]>`select * from kiln.list_generations_for_keys(
    ${pgArray(sql, keyHashes, ARRAY_OID.bytea)}, ${readRpm}::int, ${origin}, ${pgArray(sql, limits, ARRAY_OID.int4)},
    ${pgArray(sql, beforeAts, ARRAY_OID.text)}::timestamptz[], ${pgArray(sql, beforeIds, ARRAY_OID.uuid)},
    ${pgArray(sql, statuses, ARRAY_OID.text)}, ${pgArray(sql, types, ARRAY_OID.text)},
    ${pgArray(sql, modelIds, ARRAY_OID.text)}, ${pgArray(sql, sinces, ARRAY_OID.text)}::timestamptz[],
    ${pgArray(sql, endUsers, ARRAY_OID.text)}, ${pgArray(sql, metadata.map((m) => (m ? JSON.stringify(m) : null)), ARRAY_OID.text)}::jsonb[])`;
}
