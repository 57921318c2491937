// kiln.read_object_bytes: a postgres-backed object's bytes (store migrate).

import type { Queryable } from '../pool.ts';

export function readObjectBytes(sql: Queryable, path: string) {
  return sql<Array<{ data: Buffer | null }>>`select kiln.read_object_bytes(${path}) as data`;
}
