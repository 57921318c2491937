// kiln.link_identity: lets an OIDC sign-in (issuer + subject) act as an account on the MCP endpoint.

import type { Queryable } from '../pool.ts';

export interface IdentityRow {
  issuer: string;
  subject: string;
  account_id: string;
  email: string | null;
  workspace_id: string | null;
  created_at: Date;
  last_seen_at: Date | null;
}

export function linkIdentity(sql: Queryable, issuer: string, subject: string, accountId: string, workspaceId: string | null, email: string | null) {
  return sql<IdentityRow[]>`select * from kiln.link_identity(${issuer}, ${subject}, ${accountId}::uuid, ${workspaceId}::uuid, ${email})`;
}
