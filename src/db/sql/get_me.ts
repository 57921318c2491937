// kiln.get_me: the email of an account and whether its user is an admin.

import type { Queryable } from '../pool.ts';

export function getMe(sql: Queryable, accountId: string) {
  return sql<Array<{ me: { email: string; admin: boolean } | null }>>`select kiln.get_me(${accountId}::uuid) as me`;
}
