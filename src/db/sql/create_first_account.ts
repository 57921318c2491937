// kiln.create_first_account: the development account and key of an empty database (no row otherwise).

import type { Queryable } from '../pool.ts';
import type { AccountRow } from './create_account.ts';

export function createFirstAccount(sql: Queryable, email: string, keyHash: Uint8Array, displayPrefix: string) {
  return sql<Array<AccountRow | { id: null }>>`select * from kiln.create_first_account(${email}, ${keyHash}, ${displayPrefix})`;
}
