// kiln.poll_generations: GET /generations/{id} for a batch — authorizes each key and reads its
// generation (body null when there is none the key's account may see).

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { AuthColumns } from './authorize_requests.ts';
import type { GenerationBody } from './get_generations.ts';

export interface PollGenerationsRow extends AuthColumns {
  body: GenerationBody | null;
}

export function pollGenerations(sql: Queryable, keyHashes: Uint8Array[], readRpm: number, ids: string[], origin: string) {
  return sql<PollGenerationsRow[]>`select * from kiln.poll_generations(
    ${pgArray(sql, keyHashes, ARRAY_OID.bytea)}, ${readRpm}::int,
    ${pgArray(sql, ids, ARRAY_OID.uuid)}, ${origin})`;
}
