// kiln.fail_generation: fails a generation with a client-safe message and releases its reservation.

import type { Queryable } from '../pool.ts';

export function failGeneration(sql: Queryable, id: string, message: string) {
  return sql<Array<{ r: unknown }>>`select kiln.fail_generation(${id}::uuid, ${message}) as r`;
}
