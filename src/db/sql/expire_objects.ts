// kiln.expire_objects: retention — removes old outputs' rows and marks what named them expired.

import type { Queryable } from '../pool.ts';

export function expireObjects(sql: Queryable, maxAgeSeconds: number, limit: number) {
  return sql<Array<{ path: string; location: string | null }>>`select * from kiln.expire_objects(${maxAgeSeconds}::bigint, ${limit}::int)`;
}
