// kiln.update_account: an account's tier and/or personal budget.

import type { Queryable } from '../pool.ts';
import type { AccountRow } from './create_account.ts';

export function updateAccount(sql: Queryable, accountId: string, tier: string | null, budgetMicros: bigint | null, setBudget: boolean) {
  return sql<AccountRow[]>`select * from kiln.update_account(${accountId}::uuid, ${tier}, ${budgetMicros === null ? null : budgetMicros.toString()}::bigint, ${setBudget})`;
}
