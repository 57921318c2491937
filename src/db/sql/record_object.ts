// kiln.record_object: an image's row — bytes inline (postgres) or under a written bucket key (s3).

import type { Queryable } from '../pool.ts';
import type { ObjectRow } from './get_object.ts';

export interface RecordObjectArgs {
  path: string;
  ownerId: string | null;
  /** The bytes (postgres backend), or null when they are under `location`. */
  data: Uint8Array | null;
  location: string | null;
  sha256: Uint8Array;
  byteSize: number;
  contentType: string;
  format: string;
  width: number;
  height: number;
  visibility: string;
}

export function recordObject(sql: Queryable, o: RecordObjectArgs) {
  return sql<ObjectRow[]>`
    select (m).* from kiln.record_object(${o.path}, ${o.ownerId}::uuid, ${o.data}::bytea, ${o.location}::text, ${o.sha256}::bytea,
                                         ${o.byteSize}::int, ${o.contentType}, ${o.format}, ${o.width}::int, ${o.height}::int,
                                         ${o.visibility}) m`;
}
