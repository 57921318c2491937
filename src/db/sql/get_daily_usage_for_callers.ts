// kiln.get_daily_usage_for_callers: GET /usage/daily for a batch of callers already authorized —
// the daily usage of each one's billing scope (kiln.get_daily_usage). Read-only: runs on the read replica.

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { DailyUsageJson } from './get_daily_usage_for_keys.ts';

/** `froms` / `tos` are YYYY-MM-DD (null: the current period, or through today). */
export function getDailyUsageForCallers(sql: Queryable, accountIds: string[], workspaceIds: Array<string | null>, froms: Array<string | null>, tos: Array<string | null>) {
  return sql<Array<{ ord: number; body: DailyUsageJson | null }>>`select * from kiln.get_daily_usage_for_callers(
    ${pgArray(sql, accountIds, ARRAY_OID.uuid)}, ${pgArray(sql, workspaceIds, ARRAY_OID.uuid)},
    ${pgArray(sql, froms, ARRAY_OID.text)}::date[], ${pgArray(sql, tos, ARRAY_OID.text)}::date[])`;
}
