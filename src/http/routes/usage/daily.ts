// GET /usage/daily — per UTC day and model, what the key's billing scope used; with groupBy, each
// day split by end user or by a metadata key too (docs/usage.md, "Usage by end user and by metadata").

import { sendJson } from '../../json.ts';
import { defineRoute, queryParam } from '../../route.ts';
import type { DailyUsageGroupsJson } from '../../../db/sql/get_daily_usage_groups.ts';
import { DailyUsage } from '../../../billing/daily.ts';
import { dailyGroupsCall, dailyGroupsReplica, DailyUsageGroupedQuery, parseDailyGroupsQuery, renderDailyGroups, type DailyGroupsQuery } from '../../../endusers/usage.ts';
import { errors } from '../../../errors.ts';

export default defineRoute<DailyGroupsQuery, { body: DailyUsageGroupsJson | null }>({
  method: 'GET',
  path: '/usage/daily',
  operationId: 'getDailyUsage',
  summary: 'Read usage per day and model',
  description:
    'The billing scope of `GET /usage` (the personal budget, or the Team pool of a workspace-bound key) per UTC day and model. ' +
    'A charge counts on the UTC day it was made: at its reserved amount while its generation is in flight, at its actual cost once settled, not at all once released. ' +
    'By default the current period, whose days add up exactly to `used_micros` (`workspace_used_micros`). ' +
    'With `groupBy=endUser` or `groupBy=metadata.<key>`, the body also has `groups`: per day and group (the end user, or the key\'s value; null for the charges without it), ' +
    'by day then spend descending, in keyset pages (`limit`, `cursor`, `next_cursor`); the groups of a day add up exactly to that day\'s `days` rows.',
  tag: 'Usage',
  scope: 'read',
  bucket: 'read',
  query: DailyUsageGroupedQuery,
  success: { status: 200, description: 'Usage per day and model (and, with `groupBy`, a page of groups).', schema: DailyUsage, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 429, 503],
  // Authorization, rate limit and the read in one round trip; a bad query still answers 401/403/429 first.
  call: dailyGroupsCall,
  replicaRead: dailyGroupsReplica,
  prepare: (ctx, event) => parseDailyGroupsQuery(ctx, Object.fromEntries(
    (['from', 'to', 'groupBy', 'limit', 'cursor'] as const).map((n) => [n, queryParam(event, n)]),
  )),
  async handler(ctx, event, { row, payload }) {
    if (!row?.body) throw errors.notFound('Account');
    return sendJson(event, await renderDailyGroups(ctx, row.body, payload!), { headers: { 'cache-control': 'no-store' } });
  },
});
