// kiln.put_object: stores an image under a new path (never overwrites); returns its metadata.

import type { Queryable } from '../pool.ts';
import type { ObjectRow } from './get_object.ts';

export interface PutObjectArgs {
  path: string;
  ownerId: string | null;
  data: Uint8Array;
  contentType: string;
  format: string;
  width: number;
  height: number;
  visibility: string;
}

export function putObject(sql: Queryable, o: PutObjectArgs) {
  return sql<ObjectRow[]>`
    select (m).* from kiln.put_object(${o.path}, ${o.ownerId}::uuid, ${o.data}, ${o.contentType}, ${o.format},
                                      ${o.width}::int, ${o.height}::int, ${o.visibility}) m`;
}
