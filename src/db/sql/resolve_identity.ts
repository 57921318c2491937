// kiln.resolve_identity: the account (and workspace) an OIDC identity is linked to, linking it by
// verified email when allowed; no row when unlinked.

import type { Queryable } from '../pool.ts';

export interface ResolveIdentityArgs {
  issuer: string;
  subject: string;
  email: string | null;
  emailVerified: boolean;
  autoLink: boolean;
}

export function resolveIdentity(sql: Queryable, a: ResolveIdentityArgs) {
  return sql<Array<{ account_id: string; workspace_id: string | null; linked_now: boolean }>>`
    select account_id, workspace_id, linked_now
    from kiln.resolve_identity(${a.issuer}, ${a.subject}, ${a.email}, ${a.emailVerified}, ${a.autoLink})`;
}
