// kiln.claim_orphan_objects: bucket keys noted long enough ago that no object row references.

import type { Queryable } from '../pool.ts';

export function claimOrphanObjects(sql: Queryable, graceSeconds: number, limit: number) {
  return sql<Array<{ location: string }>>`select l as location from kiln.claim_orphan_objects(${graceSeconds}::int, ${limit}::int) l`;
}
