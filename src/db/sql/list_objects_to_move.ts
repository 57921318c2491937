// kiln.list_objects_to_move: the next objects not yet on the target backend (store migrate).

import type { Queryable } from '../pool.ts';

export interface ObjectToMove {
  path: string;
  backend: 'postgres' | 's3';
  location: string | null;
  sha256: Buffer | null;
  byte_size: number;
  content_type: string;
}

export function listObjectsToMove(sql: Queryable, to: string, after: string | null, limit: number) {
  return sql<ObjectToMove[]>`select * from kiln.list_objects_to_move(${to}, ${after}::text, ${limit}::int)`;
}
