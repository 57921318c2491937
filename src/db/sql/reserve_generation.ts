// kiln.reserve_generation: reserves the worst-case cost of a generation created without one (a
// run output, priced once its inputs are known), once. Raises KQ001/KP001 when the budget refuses.

import type { Queryable } from '../pool.ts';

export function reserveGeneration(sql: Queryable, id: string, amountMicros: number) {
  return sql<Array<{ r: { ok: boolean; reserved_micros?: number | string } }>>`select kiln.reserve_generation(${id}::uuid, ${amountMicros}::bigint) as r`;
}
