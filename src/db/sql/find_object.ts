// kiln.find_object: an object with its backend and location (and inline bytes), or its tombstone.

import type { Queryable } from '../pool.ts';
import type { ObjectRow } from './get_object.ts';

export type FoundObjectRow =
  | (ObjectRow & { backend: 'postgres' | 's3'; location: string | null; sha256: Buffer | null; data: Buffer | null; expired_at: null })
  | { path: string; owner_id: string | null; visibility: string; expired_at: Date };

export function findObject(sql: Queryable, path: string) {
  return sql<FoundObjectRow[]>`select * from kiln.find_object(${path})`;
}
