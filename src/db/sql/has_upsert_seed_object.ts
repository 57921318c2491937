// Whether kiln.upsert_seed_object exists yet (seed images load only once the migrations made it).

import type { Queryable } from '../pool.ts';

export function hasUpsertSeedObject(sql: Queryable) {
  return sql<Array<{ ok: boolean }>>`select to_regprocedure('kiln.upsert_seed_object(text, bytea, text, text, int, int)') is not null as ok`;
}
