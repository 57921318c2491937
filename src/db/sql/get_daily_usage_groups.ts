// kiln.get_daily_usage_groups_for_keys / _for_callers: GET /usage/daily with or without groupBy —
// the daily usage of each caller's billing scope, and with a groupBy a keyset page of its groups
// (docs/usage.md, "Usage by end user and by metadata").

import { ARRAY_OID, pgArray, type Queryable } from '../pool.ts';
import type { AuthColumns } from './authorize_requests.ts';
import type { DailyUsageJson, DailyUsagePart } from './get_daily_usage.ts';

/** One group of one day, as kiln.get_daily_usage_groups renders it. */
export interface DailyUsageGroupJson {
  day: string;
  /** An end user or a metadata value; null for the charges without the attribute. */
  group: string | null;
  spend_micros: number;
  charges: number;
  held_micros: number;
  batch: DailyUsagePart;
  interactive: DailyUsagePart;
}

/** The position after a page: the last row's day, spend and group. */
export interface GroupsPosition { day: string; spend: number; group: string | null }

/** kiln.get_daily_usage_groups' json (kiln.get_daily_usage's when there is no groupBy). */
export interface DailyUsageGroupsJson extends DailyUsageJson {
  groupBy?: string;
  groups?: DailyUsageGroupJson[];
  next?: GroupsPosition | null;
}

/** One request: the range, and the grouping (null: the plain daily usage). */
export interface DailyGroupsArgs {
  from: string | null;
  to: string | null;
  groupBy: string | null;
  limit: number;
  after: GroupsPosition | null;
}

const cols = (sql: Queryable, q: DailyGroupsArgs[]) => [
  pgArray(sql, q.map((x) => x.from), ARRAY_OID.text), pgArray(sql, q.map((x) => x.to), ARRAY_OID.text),
  pgArray(sql, q.map((x) => x.groupBy), ARRAY_OID.text), pgArray(sql, q.map((x) => x.limit), ARRAY_OID.int4),
  pgArray(sql, q.map((x) => x.after?.day ?? null), ARRAY_OID.text), pgArray(sql, q.map((x) => (x.after ? String(x.after.spend) : null)), ARRAY_OID.text),
  pgArray(sql, q.map((x) => x.after?.group ?? null), ARRAY_OID.text), pgArray(sql, q.map((x) => (x.after ? x.after.group === null : null)), ARRAY_OID.bool),
] as const;

export function getDailyUsageGroupsForKeys(sql: Queryable, keyHashes: Uint8Array[], readRpm: number, q: DailyGroupsArgs[]) {
  const [froms, tos, groupBys, limits, days, spends, groups, nulls] = cols(sql, q);
  return sql<Array<AuthColumns & { body: DailyUsageGroupsJson | null }>>`select * from kiln.get_daily_usage_groups_for_keys(
    ${pgArray(sql, keyHashes, ARRAY_OID.bytea)}, ${readRpm}::int, ${froms}::date[], ${tos}::date[], ${groupBys}::text[],
    ${limits}::int[], ${days}::date[], ${spends}::bigint[], ${groups}::text[], ${nulls}::boolean[])`;
}

export function getDailyUsageGroupsForCallers(sql: Queryable, accountIds: string[], workspaceIds: Array<string | null>, q: DailyGroupsArgs[]) {
  const [froms, tos, groupBys, limits, days, spends, groups, nulls] = cols(sql, q);
  return sql<Array<{ ord: number; body: DailyUsageGroupsJson | null }>>`select * from kiln.get_daily_usage_groups_for_callers(
    ${pgArray(sql, accountIds, ARRAY_OID.uuid)}, ${pgArray(sql, workspaceIds, ARRAY_OID.uuid)}, ${froms}::date[], ${tos}::date[],
    ${groupBys}::text[], ${limits}::int[], ${days}::date[], ${spends}::bigint[], ${groups}::text[], ${nulls}::boolean[])`;
}
