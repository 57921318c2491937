// kiln.get_usage: the GET /usage body of an account (and of a workspace-bound key's Team pool);
// null when the account does not exist. Its shape is billing/usage.ts's Usage schema.

import type { Queryable } from '../pool.ts';

export function getUsage(sql: Queryable, accountId: string, workspaceId: string | null) {
  return sql<Array<{ usage: unknown }>>`select kiln.get_usage(${accountId}::uuid, ${workspaceId}::uuid) as usage`;
}
