// kiln.ensure_secret: the named secret, storing the candidate first when there is none.

import type { Queryable } from '../pool.ts';

export function ensureSecret(sql: Queryable, name: string, candidate: Uint8Array) {
  return sql<Array<{ value: Buffer }>>`select kiln.ensure_secret(${name}, ${candidate}) as value`;
}
