// kiln.fail_generation: fails a generation with a client-safe message and releases its reservation.
// `ended`: every generation the call ended (this one, and a run's outputs it abandoned).

import type { Queryable } from '../pool.ts';
import type { EndedGeneration } from './ended_generations.ts';

export function failGeneration(sql: Queryable, id: string, message: string) {
  return sql<Array<{ r: unknown; ended: EndedGeneration[] }>>`
    with c as materialized (select kiln.fail_generation(${id}::uuid, ${message}) as r)
    select c.r, kiln.take_ended_generations() as ended from c`;
}
