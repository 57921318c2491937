// kiln.remove_workspace_member: a member leaves (the row stays, with left_at).

import type { Queryable } from '../pool.ts';
import type { MemberRow } from './add_workspace_member.ts';

export function removeWorkspaceMember(sql: Queryable, workspaceId: string, accountId: string) {
  return sql<MemberRow[]>`select * from kiln.remove_workspace_member(${workspaceId}::uuid, ${accountId}::uuid)`;
}
