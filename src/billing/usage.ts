// Usage: the tier, budget and usage of a caller's billing scope (personal, or the Team pool of a
// workspace-bound key or identity) — the GET /usage body and the MCP get_usage result.

import * as v from 'valibot';
import { authorizedCall, authorizeRequests, type AuthorizedCall, type Caller } from '../auth/access.ts';
import type { Context } from '../context.ts';
import { getUsage as getUsageSql } from '../db/sql/get_usage.ts';
import { errors } from '../errors.ts';
import { registerSchemas } from '../schemas.ts';

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
  key_budget_micros: micros('The calling key\'s own budget per period (`budgetMicros` at creation); null when it has none (or for sessions and MCP identities).'),
  key_used_micros: micros('What the key has spent or holds this period; null when it has no budget of its own.'),
  key_remaining_micros: micros('The key\'s own budget left, at least 0; null when it has none. A generation needs room in both this and the pool.'),
});
registerSchemas({ Usage });

export type UsageBody = v.InferOutput<typeof Usage>;

/** Authorization and the usage body of each key's billing scope, in one call (GET /usage). */
export const usageCall: AuthorizedCall<null, { usage: string }> = authorizedCall(100, authorizeRequests<null>(true));

/** The usage of a resolved caller's billing scope (MCP). */
export async function getUsage(ctx: Context, caller: Caller): Promise<UsageBody> {
  const [row] = await getUsageSql(ctx.sql, caller.accountId, caller.workspaceId);
  // kiln.get_usage builds exactly the Usage schema's body (null: no such account).
  const usage = (row?.usage ?? null) as UsageBody | null;
  if (!usage) throw errors.notFound('Account');
  return usage;
}
