// kiln.get_end_user_budget, kiln.set_end_user_budget, kiln.remove_end_user_budget: an end user's
// cap in a billing scope (docs/usage.md, "Budgets per end user"). The pool is the workspace of a
// workspace-bound caller, else the account.

import type { Queryable } from '../pool.ts';

/** An end user as kiln_private.end_user_budget_json renders it. */
export interface EndUserBudgetJson {
  endUser: string;
  /** The cap per period; null = none (the use shown is this calendar month's). */
  budgetMicros: number | null;
  period: 'day' | 'month';
  rpm: number | null;
  periodStart: string;
  usedMicros: number;
  heldMicros: number;
  remainingMicros: number | null;
  updatedAt: string | null;
}

export function getEndUserBudget(sql: Queryable, accountId: string, workspaceId: string | null, endUser: string) {
  return sql<Array<{ b: EndUserBudgetJson }>>`select kiln.get_end_user_budget(${accountId}::uuid, ${workspaceId}::uuid, ${endUser}::text) as b`;
}

export function setEndUserBudget(sql: Queryable, accountId: string, workspaceId: string | null, endUser: string,
  budgetMicros: number | string, period: 'day' | 'month', rpm: number | null) {
  return sql<Array<{ b: EndUserBudgetJson }>>`select kiln.set_end_user_budget(${accountId}::uuid, ${workspaceId}::uuid, ${endUser}::text,
    ${budgetMicros}::bigint, ${period}::text, ${rpm}::int) as b`;
}

export function removeEndUserBudget(sql: Queryable, accountId: string, workspaceId: string | null, endUser: string) {
  return sql`select kiln.remove_end_user_budget(${accountId}::uuid, ${workspaceId}::uuid, ${endUser}::text)`;
}
