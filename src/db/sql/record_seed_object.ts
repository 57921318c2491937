// kiln.record_seed_object: stores or refreshes a shared seed image on either backend.

import type { Queryable } from '../pool.ts';

export interface RecordSeedArgs {
  path: string;
  data: Uint8Array | null;
  location: string | null;
  sha256: Uint8Array;
  byteSize: number;
  contentType: string;
  format: string;
  width: number;
  height: number;
}

export function recordSeedObject(sql: Queryable, o: RecordSeedArgs) {
  return sql<Array<{ changed: boolean }>>`
    select kiln.record_seed_object(${o.path}, ${o.data}::bytea, ${o.location}::text, ${o.sha256}::bytea, ${o.byteSize}::int,
                                   ${o.contentType}, ${o.format}, ${o.width}::int, ${o.height}::int) as changed`;
}
