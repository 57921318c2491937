// kiln.complete_generation: stores the result and settles the charge at the actual cost in one
// idempotent call (`applied` false when it was already completed); the charge names `modelId`,
// the catalog entry that produced the output.

import type postgres from 'postgres';
import type { Queryable } from '../pool.ts';

export function completeGeneration(sql: Queryable, id: string, result: unknown, costMicros: number, providerRequestId: string | null, modelId: string) {
  return sql<Array<{ r: { applied: boolean } }>>`
    select kiln.complete_generation(${id}::uuid, ${sql.json(result as postgres.JSONValue)}::jsonb, ${costMicros}::bigint, ${providerRequestId}, ${modelId}) as r`;
}
