// get_usage and list_models: the account's tier and budget (the GET /usage body for the identity's
// billing scope) and the model catalog (the GET /models body), both on the per-account MCP read bucket.
import * as v from 'valibot';
import { cachedCatalog, ModelList } from '../../billing/catalog.ts';
import { DailyUsage, DailyUsageQuery, dailyUsageOf, parseDailyRange } from '../../billing/daily.ts';
import { getUsage, Usage, type UsageBody } from '../../billing/usage.ts';
import type { Context } from '../../context.ts';
import type { ToolDef } from '../tool-server.ts';
import { defineTool, dollars, READ_ONLY } from './common.ts';

const NoArguments = v.object({});

export function usageTool(ctx: Context): ToolDef {
  return defineTool(ctx, {
    name: 'get_usage',
    title: 'Usage and budget',
    description:
      'Read the signed-in account\'s plan tier and current generation budget (personal, and the Team pool when this sign-in bills a workspace). ' +
      'Amounts are microdollars (1,000,000 = 1 USD). Use it as a pre-flight check before generating.',
    input: NoArguments,
    output: Usage,
    annotations: READ_ONLY,
    bucket: 'read',
    async handler(caller, _args: unknown, ctx) {
      const usage = await getUsage(ctx, caller);
      return { structuredContent: usage, text: usageText(usage) };
    },
  });
}

const DailyArgs = v.object({ from: v.optional(DailyUsageQuery.from), to: v.optional(DailyUsageQuery.to) });

export function dailyUsageTool(ctx: Context): ToolDef {
  return defineTool(ctx, {
    name: 'get_daily_usage',
    title: 'Usage per day and model',
    description:
      'Read what this sign-in\'s billing scope (the personal budget, or the Team pool) spent per UTC day and model, in microdollars, with the number of charges. ' +
      'By default the current budget period, whose days add up exactly to get_usage\'s used amount; or any range of at most 366 days given as from/to (YYYY-MM-DD).',
    input: DailyArgs,
    output: DailyUsage,
    annotations: READ_ONLY,
    bucket: 'read',
    async handler(caller, args: v.InferOutput<typeof DailyArgs>, ctx) {
      const body = await dailyUsageOf(ctx, caller, parseDailyRange(args));
      const total = body.days.reduce((sum, d) => sum + d.spend_micros, 0);
      const charges = body.days.reduce((sum, d) => sum + d.charges, 0);
      const days = new Set(body.days.map((d) => d.day)).size;
      return {
        structuredContent: body,
        text: `${body.from} to ${body.to} (${body.scope}${body.workspace_id ? ` ${body.workspace_id}` : ''}): ${dollars(total)} over ${charges} charge${charges === 1 ? '' : 's'} on ${days} day${days === 1 ? '' : 's'}.`,
      };
    },
  });
}

function usageText(u: UsageBody): string {
  const personal =
    u.token_budget_micros == null
      ? `personal budget unlimited (${dollars(u.used_micros)} used this period)`
      : `personal budget ${dollars(u.remaining_micros)} remaining of ${dollars(u.token_budget_micros)} (resets ${u.resets_at})`;
  if (u.scope === 'personal') return `Tier ${u.tier}; ${personal}. Generations bill the personal budget.`;
  const pool =
    u.workspace_used_micros == null
      ? 'the workspace has no active Team plan or this account is no longer a member, so generations cannot be billed'
      : u.workspace_budget_micros == null
        ? `Team pool unlimited (${dollars(u.workspace_used_micros)} used)`
        : `Team pool ${dollars(u.workspace_remaining_micros)} remaining of ${dollars(u.workspace_budget_micros)} (resets ${u.workspace_resets_at})`;
  return `Tier ${u.tier}; generations bill workspace ${u.workspace_id}: ${pool}. (${personal}.)`;
}

const ModelFilter = v.object({
  filter: v.optional(
    v.pipe(
      v.picklist(['image', 'code'], 'must be "image" or "code"'),
      v.description('`image`: image models (for generate_image). `code`: text and SVG models (for generate_code). Omit for all.'),
    ),
  ),
});

export function modelsTool(ctx: Context): ToolDef {
  return defineTool(ctx, {
    name: 'list_models',
    title: 'List models',
    description:
      'List the generation models with the marked-up prices billed to this account (microdollars per image, or per input/output token). ' +
      'Optionally filter to image models or to text/code (text and SVG) models. Pass a model `id` as `model` to generate_image or generate_code.',
    input: ModelFilter,
    output: ModelList,
    annotations: READ_ONLY,
    bucket: 'read',
    async handler(_caller, args: v.InferOutput<typeof ModelFilter>, ctx) {
      const catalog = await cachedCatalog(ctx);
      const data = catalog.models.filter((m) => !args.filter || (args.filter === 'image' ? m.category === 'image' : m.category !== 'image'));
      const text = data.length
        ? `${data.length} model${data.length === 1 ? '' : 's'}: ${data.map((m) => `${m.id} (${m.category})`).join(', ')}.`
        : 'No models match.';
      return { structuredContent: { data }, text };
    },
  });
}
