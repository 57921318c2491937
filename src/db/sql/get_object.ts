// kiln.get_object: one stored object with its bytes (no row when absent).

import type { Queryable } from '../pool.ts';

/** An object's metadata (kiln.object_meta). */
export interface ObjectRow {
  path: string;
  owner_id: string | null;
  content_type: string;
  format: string;
  width: number;
  height: number;
  byte_size: number;
  visibility: string;
  created_at: Date;
}

export function getObject(sql: Queryable, path: string) {
  return sql<Array<ObjectRow & { data: Buffer }>>`select * from kiln.get_object(${path})`;
}
