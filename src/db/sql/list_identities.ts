// kiln.list_identities: an account's linked OIDC identities, oldest first.

import type { Queryable } from '../pool.ts';
import type { IdentityRow } from './link_identity.ts';

export function listIdentities(sql: Queryable, accountId: string) {
  return sql<IdentityRow[]>`select * from kiln.list_identities(${accountId}::uuid)`;
}
