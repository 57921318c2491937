// kiln.create_account: a new account (the tier's default budget unless one is given).

import type { Queryable } from '../pool.ts';

export interface AccountRow {
  id: string;
  email: string;
  tier: string;
  budget_micros: string | null;
  period_anchor: Date;
  created_at: Date;
  parallel_slots: number | null;
}

export function createAccount(sql: Queryable, email: string, tier: string, budgetMicros: bigint | null, useTierDefault: boolean) {
  return sql<AccountRow[]>`select * from kiln.create_account(${email}, ${tier}, ${budgetMicros === null ? null : budgetMicros.toString()}::bigint, ${useTierDefault})`;
}
