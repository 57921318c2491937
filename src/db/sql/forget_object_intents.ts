// kiln.forget_object_intents: drops the notes of bucket keys the sweep deleted.

import type { Queryable } from '../pool.ts';

export function forgetObjectIntents(sql: Queryable, locations: string[]) {
  return sql<Array<{ n: number }>>`select kiln.forget_object_intents(${locations}::text[]) as n`;
}
