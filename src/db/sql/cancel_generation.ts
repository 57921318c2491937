// kiln.cancel_generation: cancels a generation of an account created through one of the given
// origins (failed 'canceled', reservation released, its worker told to abort).

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { GenerationBody } from './get_generations.ts';

export interface CancelOutcome<B> {
  outcome: 'canceled' | 'conflict' | 'missing';
  body?: B | null;
  /** A canceled generation's catalog model (migration 000056). */
  model_id?: string | null;
}

export function cancelGeneration(sql: Queryable, accountId: string, id: string, origins: string[]) {
  return sql<Array<{ c: CancelOutcome<GenerationBody> }>>`select kiln.cancel_generation(${accountId}::uuid, ${id}::uuid, ${pgArray(sql, origins, ARRAY_OID.text)}) as c`;
}
