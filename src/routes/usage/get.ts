// GET /usage — tier, personal budget and, for workspace-bound keys, the Team pool.

import * as v from 'valibot';
import { authorizeWithUsage, sendJson } from '../../http.ts';
import { defineRoute } from '../../route.ts';
import { registerSchemas } from '../../schemas.ts';

const micros = (d: string) => v.pipe(v.nullable(v.pipe(v.number(), v.integer())), v.description(d));
const dateTime = (d: string) => v.pipe(v.nullable(v.pipe(v.string(), v.isoTimestamp())), v.description(d));

export const Usage = v.object({
  tier: v.picklist(['legacy_free', 'pro', 'enterprise', 'blocked']),
  token_budget_micros: micros('Personal period budget; null = unlimited.'),
  used_micros: v.pipe(v.number(), v.integer(), v.description('Personal usage this period, including reservations still in flight.')),
  remaining_micros: micros('Null = unlimited.'),
  resets_at: dateTime('When the personal budget resets.'),
  scope: v.picklist(['personal', 'workspace']),
  workspace_id: v.pipe(v.nullable(v.pipe(v.string(), v.uuid())), v.description('Set for workspace-bound keys.')),
  workspace_budget_micros: micros('Pooled budget; null when unlimited, no active Team plan, or access no longer resolves.'),
  workspace_used_micros: micros('Pool usage; null without an active Team plan.'),
  workspace_remaining_micros: micros('Pool remainder, at least 0; null when unlimited or unavailable.'),
  workspace_resets_at: dateTime('When the pool resets.'),
});
registerSchemas({ Usage });

export default defineRoute({
  method: 'GET',
  path: '/usage',
  operationId: 'getUsage',
  summary: 'Read plan tier, budget and usage',
  description: 'Intended as a pre-flight check before generating.',
  tag: 'Usage',
  scope: 'read',
  success: { status: 200, description: 'Usage for the key\'s billing scope.', schema: Usage },
  errors: [401, 403, 429, 503],
  async handler(ctx, event) {
    // Authorization, rate limit and the usage read in one round trip.
    const { usage } = await authorizeWithUsage(ctx, event);
    return sendJson(event, usage, { raw: true, headers: { 'cache-control': 'no-store' } });
  },
});
