// kiln.note_object_intent: notes a bucket key before its bytes are written (the sweep's safety net).

import type { Queryable } from '../pool.ts';

export function noteObjectIntent(sql: Queryable, location: string) {
  return sql<object[]>`select kiln.note_object_intent(${location})`;
}
