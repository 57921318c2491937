// kiln.count_objects_by_backend: objects and bytes per backend.

import type { Queryable } from '../pool.ts';

export function countObjectsByBackend(sql: Queryable) {
  return sql<Array<{ backend: string; objects: string; bytes: string }>>`select backend, objects::text, bytes::text from kiln.count_objects_by_backend()`;
}
