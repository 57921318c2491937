// kiln.switch_object: points one object at its verified copy on the other backend (store migrate).

import type { Queryable } from '../pool.ts';

export function switchObject(sql: Queryable, path: string, fromLocation: string | null, data: Uint8Array | null, location: string | null, sha256: Uint8Array) {
  return sql<Array<{ switched: boolean }>>`
    select kiln.switch_object(${path}, ${fromLocation}::text, ${data}::bytea, ${location}::text, ${sha256}::bytea) as switched`;
}
