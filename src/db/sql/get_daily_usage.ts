// kiln.get_daily_usage: the GET /usage/daily body of an account's billing scope (the personal
// budget, or a Team pool) for an already-authorized caller (MCP's get_daily_usage).

import type { Queryable } from '../pool.ts';
import type { DailyUsageJson } from './get_daily_usage_for_keys.ts';

/** `from` / `to` are YYYY-MM-DD (null: the current period, or through today). */
export function getDailyUsage(sql: Queryable, accountId: string, workspaceId: string | null, from: string | null, to: string | null) {
  return sql<Array<{ body: DailyUsageJson | null }>>`select kiln.get_daily_usage(${accountId}::uuid, ${workspaceId}::uuid, ${from}::date, ${to}::date) as body`;
}
