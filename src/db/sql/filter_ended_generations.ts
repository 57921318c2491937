// kiln.filter_ended_generations: which of the given generations have ended (a worker's backstop
// for a missed cancel notification).

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';

export function filterEndedGenerations(sql: Queryable, ids: string[]) {
  return sql<Array<{ ids: string[] }>>`select kiln.filter_ended_generations(${pgArray(sql, ids, ARRAY_OID.uuid)}) as ids`;
}
