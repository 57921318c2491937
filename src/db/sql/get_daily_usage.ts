// kiln.get_daily_usage: the GET /usage/daily body of an account's billing scope (the personal
// budget, or a Team pool) for an already-authorized caller (MCP's get_daily_usage).

import type { Queryable } from '../pool.ts';

/** kiln.get_daily_usage's json: the GET /usage/daily body. */
export interface DailyUsageJson {
  scope: 'personal' | 'workspace';
  workspace_id: string | null;
  from: string;
  to: string;
  days: Array<{
    day: string; model_id: string; spend_micros: number; charges: number; held_micros: number;
    /** The parts of the three figures from batch lines and from everything else; they add up to them. */
    batch: DailyUsagePart; interactive: DailyUsagePart;
  }>;
}

export interface DailyUsagePart { spend_micros: number; charges: number; held_micros: number }

/** `from` / `to` are YYYY-MM-DD (null: the current period, or through today). */
export function getDailyUsage(sql: Queryable, accountId: string, workspaceId: string | null, from: string | null, to: string | null) {
  return sql<Array<{ body: DailyUsageJson | null }>>`select kiln.get_daily_usage(${accountId}::uuid, ${workspaceId}::uuid, ${from}::date, ${to}::date) as body`;
}
