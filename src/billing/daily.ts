// Daily usage: per UTC day and model, what a caller's billing scope used — the GET /usage/daily
// body, read from the ledger's rollup (kiln_private.charge_days) so a month costs a month's rows.

import * as v from 'valibot';
import type { Caller } from '../auth/access.ts';
import type { Context } from '../context.ts';
import { getDailyUsage, type DailyUsageJson } from '../db/sql/get_daily_usage.ts';
import { readTolerant } from '../db/replica.ts';
import { errors } from '../errors.ts';
import { registerSchemas } from '../schemas.ts';

/** The longest range one request may ask for, in days (both ends included). */
export const MAX_DAILY_RANGE_DAYS = 366;

const day = (d: string) => v.pipe(v.string(), v.regex(/^\d{4}-\d{2}-\d{2}$/), v.description(d));
const micros = (d: string) => v.pipe(v.number(), v.integer(), v.description(d));

export const DailyUsageQuery = {
  from: v.pipe(v.string(), v.isoDate('must be a date as YYYY-MM-DD'), v.description('First UTC day, `YYYY-MM-DD`. Default: the first day of the current period.')),
  to: v.pipe(v.string(), v.isoDate('must be a date as YYYY-MM-DD'), v.description(`Last UTC day, \`YYYY-MM-DD\`, at most ${MAX_DAILY_RANGE_DAYS} days after \`from\` counting both. Default: the last day of the current period when \`from\` is not given either, else today.`)),
};

/** The part of a day's figures one lane made (docs/usage.md, "Daily usage"). */
const DailyUsagePart = (lane: string) => v.pipe(v.object({
  spend_micros: micros(`The part of \`spend_micros\` ${lane}.`),
  charges: micros(`The part of \`charges\` ${lane}.`),
  held_micros: micros(`The part of \`held_micros\` ${lane}.`),
}), v.description(`The day's figures ${lane}; \`batch\` and \`interactive\` add up exactly to them.`));

export const DailyUsageDay = v.object({
  day: day('UTC day the charges were made on.'),
  model_id: v.pipe(v.string(), v.description('The catalog entry billed (the one that produced the output).')),
  spend_micros: micros('What the day\'s charges of this model count against the budget: settled charges at their cost plus reservations still in flight at their reserved amount (as `used_micros` counts them).'),
  charges: micros('Charges counted: settled ones and reservations still in flight (released reservations cost nothing and are left out).'),
  held_micros: micros('The part of `spend_micros` still reserved by generations in flight; it becomes their actual cost (never more) when they settle.'),
  batch: DailyUsagePart('made by lines of batches (`POST /batches`), billed at their batch price'),
  interactive: DailyUsagePart('made by everything else (`POST /generations`, workflow runs, MCP)'),
});

/** One day's group with `groupBy` (docs/usage.md, "Usage by end user and by metadata"). */
export const DailyUsageGroup = v.object({
  day: day('UTC day the charges were made on.'),
  group: v.pipe(v.nullable(v.string()), v.description('The end user, or the value of the metadata key; null for the day\'s charges without it (the day\'s total minus its other groups).')),
  spend_micros: micros('As a day\'s `spend_micros`: settled charges at their cost plus reservations in flight at their reserved amount.'),
  charges: micros('Charges counted: settled ones and reservations still in flight.'),
  held_micros: micros('The part of `spend_micros` still reserved by generations in flight.'),
  batch: DailyUsagePart('made by lines of batches (`POST /batches`), billed at their batch price'),
  interactive: DailyUsagePart('made by everything else (`POST /generations`, workflow runs, MCP)'),
});

export const DailyUsage = v.object({
  scope: v.pipe(v.picklist(['personal', 'workspace']), v.description('As in `GET /usage`: `workspace` for workspace-bound keys (the Team pool\'s days, every member\'s charges).')),
  workspace_id: v.pipe(v.nullable(v.pipe(v.string(), v.uuid())), v.description('Set for workspace-bound keys.')),
  from: day('First day of the range.'),
  to: day('Last day of the range.'),
  days: v.pipe(v.array(DailyUsageDay), v.description('One entry per day and model with charges, by day then model. Over a whole period they add up exactly to `used_micros` (`workspace_used_micros` for a workspace-bound key) of `GET /usage`.')),
  // Only with `groupBy` (GET /usage/daily): additive, absent otherwise.
  groupBy: v.optional(v.pipe(v.string(), v.description('With `groupBy`: the grouping asked for (`endUser` or `metadata.<key>`).'))),
  groups: v.optional(v.pipe(v.array(DailyUsageGroup), v.description(
    'With `groupBy`: one row per day and group, by day, then `spend_micros` descending, then group (null last), a page at a time. ' +
    'The groups of a day add up exactly to that day\'s `days` rows (`spend_micros`, `charges`, `held_micros` and their parts).'))),
  next_cursor: v.optional(v.pipe(v.nullable(v.string()), v.description('With `groupBy`: pass as `cursor` for the next page of groups; null on the last page.'))),
});
registerSchemas({ DailyUsage, DailyUsageDay, DailyUsageGroup });

export type DailyUsageBody = v.InferOutput<typeof DailyUsage>;

export interface DailyRange {
  from: string | null;
  to: string | null;
}

function isDay(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const d = new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!));
  return +m[1]! >= 1970 && d.getUTCFullYear() === +m[1]! && d.getUTCMonth() === +m[2]! - 1 && d.getUTCDate() === +m[3]!;
}

/** Reads and checks from/to (to defaults to today when from is given); invalid_request for a bad date, from after to, or too long a range. */
export function parseDailyRange(raw: { from?: string; to?: string }, today = new Date()): DailyRange {
  for (const k of ['from', 'to'] as const) {
    if (raw[k] !== undefined && !isDay(raw[k]!)) throw errors.invalid(`${k}: must be a date as YYYY-MM-DD`);
  }
  if (raw.to !== undefined && raw.from === undefined) throw errors.invalid('from: required when to is given');
  if (raw.from === undefined) return { from: null, to: null };
  const to = raw.to ?? today.toISOString().slice(0, 10);
  const span = (Date.parse(to) - Date.parse(raw.from)) / 86_400_000;
  if (span < 0) throw errors.invalid(raw.to === undefined ? 'from: must not be after today' : 'from: must not be after to');
  if (span + 1 > MAX_DAILY_RANGE_DAYS) throw errors.invalid(`to: the range may cover at most ${MAX_DAILY_RANGE_DAYS} days`);
  // The day checked here is the day asked for: SQL gets it rather than taking its own today, so
  // a clock that differs across midnight cannot make the range refused inside a batch (which
  // would fail every request batched with this one).
  return { from: raw.from, to };
}

/** The daily usage of a caller already authorized (MCP): its billing scope's days over `range`. */
export async function dailyUsageOf(ctx: Context, caller: Caller, range: DailyRange): Promise<DailyUsageJson> {
  const [row] = await readTolerant(ctx, (sql) => getDailyUsage(sql, caller.accountId, caller.workspaceId, range.from, range.to));
  if (!row?.body) throw errors.notFound('Account');
  return row.body;
}
