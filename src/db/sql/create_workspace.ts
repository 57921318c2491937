// kiln.create_workspace: a Team workspace with its owner as first member.

import type { Queryable } from '../pool.ts';

export interface WorkspaceRow {
  id: string;
  name: string;
  owner_id: string;
  plan_status: 'none' | 'active' | 'lapsed';
  plan_budget_micros: string | null;
  plan_period_anchor: Date;
  created_at: Date;
}

export function createWorkspace(sql: Queryable, name: string, ownerId: string) {
  return sql<WorkspaceRow[]>`select * from kiln.create_workspace(${name}, ${ownerId}::uuid)`;
}
