// Whether kiln.record_seed_object exists yet (before it, seeds load through kiln.upsert_seed_object).

import type { Queryable } from '../pool.ts';

export function hasRecordSeedObject(sql: Queryable) {
  return sql<Array<{ ok: boolean }>>`select to_regprocedure('kiln.record_seed_object(text, bytea, text, bytea, int, text, text, int, int)') is not null as ok`;
}
