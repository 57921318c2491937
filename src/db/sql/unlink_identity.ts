// kiln.unlink_identity: removes an OIDC sign-in's link.

import type { Queryable } from '../pool.ts';
import type { IdentityRow } from './link_identity.ts';

export function unlinkIdentity(sql: Queryable, issuer: string, subject: string) {
  return sql<IdentityRow[]>`select * from kiln.unlink_identity(${issuer}, ${subject})`;
}
