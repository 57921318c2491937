// kiln.list_generations_for_callers: GET /generations for a batch of callers already authorized —
// each one's keyset page (kiln.list_generations). Read-only: runs on the read replica.

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { GenerationPage } from './list_generations_for_keys.ts';

/** Per request: `beforeAts` and `sinces` are timestamps (ISO text), `statuses` and `types` comma-separated lists; null = none. */
export function listGenerationsForCallers(
  sql: Queryable, accountIds: string[], workspaceIds: Array<string | null>, origin: string, limits: number[],
  beforeAts: Array<string | null>, beforeIds: Array<string | null>, statuses: Array<string | null>,
  types: Array<string | null>, modelIds: Array<string | null>, sinces: Array<string | null>,
  endUsers: Array<string | null> = [], metadata: Array<Record<string, string> | null> = [],
) {
  return sql<Array<{ ord: number; body: GenerationPage }>>`select * from kiln.list_generations_for_callers(
    ${pgArray(sql, accountIds, ARRAY_OID.uuid)}, ${pgArray(sql, workspaceIds, ARRAY_OID.uuid)}, ${origin},
    ${pgArray(sql, limits, ARRAY_OID.int4)}, ${pgArray(sql, beforeAts, ARRAY_OID.text)}::timestamptz[],
    ${pgArray(sql, beforeIds, ARRAY_OID.uuid)}, ${pgArray(sql, statuses, ARRAY_OID.text)}, ${pgArray(sql, types, ARRAY_OID.text)},
    ${pgArray(sql, modelIds, ARRAY_OID.text)}, ${pgArray(sql, sinces, ARRAY_OID.text)}::timestamptz[],
    ${pgArray(sql, endUsers, ARRAY_OID.text)}, ${pgArray(sql, metadata.map((m) => (m ? JSON.stringify(m) : null)), ARRAY_OID.text)}::jsonb[])`;
}
