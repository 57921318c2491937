// GET /usage/daily — per UTC day and model, what the key's billing scope used.

import { sendJson } from '../../json.ts';
import { defineRoute, queryParam } from '../../route.ts';
import type { DailyUsageJson } from '../../../db/sql/get_daily_usage_for_keys.ts';
import { DailyUsage, DailyUsageQuery, dailyUsageCall, dailyUsageReplica, parseDailyRange, type DailyRange } from '../../../billing/daily.ts';
import { errors } from '../../../errors.ts';

export default defineRoute<DailyRange, { body: DailyUsageJson | null }>({
  method: 'GET',
  path: '/usage/daily',
  operationId: 'getDailyUsage',
  summary: 'Read usage per day and model',
  description:
    'The billing scope of `GET /usage` (the personal budget, or the Team pool of a workspace-bound key) per UTC day and model. ' +
    'A charge counts on the UTC day it was made: at its reserved amount while its generation is in flight, at its actual cost once settled, not at all once released. ' +
    'By default the current period, whose days add up exactly to `used_micros` (`workspace_used_micros`).',
  tag: 'Usage',
  scope: 'read',
  bucket: 'read',
  query: DailyUsageQuery,
  success: { status: 200, description: 'Usage per day and model.', schema: DailyUsage, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 429, 503],
  // Authorization, rate limit and the read in one round trip; a bad range still answers 401/403/429 first.
  call: dailyUsageCall,
  replicaRead: dailyUsageReplica,
  prepare: (_ctx, event) => parseDailyRange({ from: queryParam(event, 'from'), to: queryParam(event, 'to') }),
  async handler(_ctx, event, { row }) {
    if (!row?.body) throw errors.notFound('Account');
    return sendJson(event, row.body, { headers: { 'cache-control': 'no-store' } });
  },
});
