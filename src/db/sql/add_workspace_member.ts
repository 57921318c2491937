// kiln.add_workspace_member: adds (or re-adds) a member with a role.

import type { Queryable } from '../pool.ts';

export interface MemberRow {
  workspace_id: string;
  account_id: string;
  role: 'owner' | 'admin' | 'member';
  joined_at: Date;
  left_at: Date | null;
}

export function addWorkspaceMember(sql: Queryable, workspaceId: string, accountId: string, role: string) {
  return sql<MemberRow[]>`select * from kiln.add_workspace_member(${workspaceId}::uuid, ${accountId}::uuid, ${role})`;
}
