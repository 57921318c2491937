// kiln.upsert_seed_object: stores or refreshes a shared image under seed/ (ownerless, public).

import type { Queryable } from '../pool.ts';

export function upsertSeedObject(sql: Queryable, path: string, data: Uint8Array, contentType: string, format: string, width: number, height: number) {
  return sql<object[]>`select kiln.upsert_seed_object(${path}, ${data}, ${contentType}, ${format}, ${width}, ${height})`;
}
