// kiln.get_daily_usage_for_keys: GET /usage/daily for a batch — authorizes each key and reads the
// daily usage of its billing scope (body null when not admitted).

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { AuthColumns } from './authorize_requests.ts';

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

export interface GetDailyUsageForKeysRow extends AuthColumns {
  body: DailyUsageJson | null;
}

/** `froms` / `tos` are YYYY-MM-DD (null: the current period, or through today). */
export function getDailyUsageForKeys(sql: Queryable, keyHashes: Uint8Array[], readRpm: number, froms: Array<string | null>, tos: Array<string | null>) {
  return sql<GetDailyUsageForKeysRow[]>`select * from kiln.get_daily_usage_for_keys(
    ${pgArray(sql, keyHashes, ARRAY_OID.bytea)}, ${readRpm}::int,
    ${pgArray(sql, froms, ARRAY_OID.text)}::date[], ${pgArray(sql, tos, ARRAY_OID.text)}::date[])`;
}
