// kiln.cancel_generations_for_keys: POST /generations/{id}/cancel for a batch — authorizes each
// key and cancels its generation (outcome null when not admitted).

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { AuthColumns } from './authorize_requests.ts';
import type { GenerationBody } from './get_generations.ts';

export interface CancelGenerationsForKeysRow extends AuthColumns {
  outcome: 'canceled' | 'conflict' | 'missing' | null;
  body: GenerationBody | null;
  /** The canceled generation's catalog model (migration 000056), for kiln_generations_total. */
  model_id: string | null;
}

export function cancelGenerationsForKeys(sql: Queryable, keyHashes: Uint8Array[], readRpm: number, ids: string[], origin: string) {
  return sql<CancelGenerationsForKeysRow[]>`select * from kiln.cancel_generations_for_keys(
    ${pgArray(sql, keyHashes, ARRAY_OID.bytea)}, ${readRpm}::int, ${pgArray(sql, ids, ARRAY_OID.uuid)}, ${origin})`;
}
