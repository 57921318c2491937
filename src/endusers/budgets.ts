// Budgets per end user (docs/usage.md, "Budgets per end user"): PUT, GET and DELETE
// /end-users/{endUser} for an authorized caller. The cap belongs to the caller's billing scope (the
// workspace of a workspace-bound key, else the account); the SQL reserves against it
// (kiln_private.reserve_budgets) and audits every change.

import { getRouterParam, type H3Event } from 'h3';
import * as v from 'valibot';
import type { Caller } from '../auth/access.ts';
import { audited } from '../auth/audit.ts';
import type { Context } from '../context.ts';
import { getEndUserBudget, removeEndUserBudget, setEndUserBudget, type EndUserBudgetJson } from '../db/sql/end_user_budgets.ts';
import { errors, type ErrorDetail } from '../errors.ts';
import { endUserProblem, MAX_END_USER_CHARS } from '../generations/attribution.ts';
import { registerSchemas } from '../schemas.ts';

export const END_USER_PERIODS = ['day', 'month'] as const;
export type EndUserPeriod = (typeof END_USER_PERIODS)[number];
export const MAX_END_USER_RPM = 1_000_000;

/** A PUT body, checked. */
export interface EndUserBudgetInput {
  budgetMicros: number;
  period: EndUserPeriod;
  rpm: number | null;
}

// ---------------------------------------------------------------- schemas (OpenAPI, typed client)

const micros = v.pipe(v.number(), v.integer(), v.minValue(0, 'must be at least 0'), v.maxValue(Number.MAX_SAFE_INTEGER, 'is too large'));

export const EndUserParam = v.pipe(
  v.string(),
  v.description(`Your own id of the end user, as the requests' \`endUser\` names it (1 to ${MAX_END_USER_CHARS} printable characters), URL-encoded.`),
);

export const SetEndUserBudgetRequest = v.object({
  budgetMicros: v.pipe(micros, v.description('What the end user may spend per period, in microdollars (0 refuses every request that spends).')),
  period: v.pipe(v.picklist(END_USER_PERIODS, 'must be one of day, month'),
    v.description('`day`: the UTC day; `month`: the calendar month in UTC. Not the account\'s billing period.')),
  rpm: v.optional(v.nullable(v.pipe(v.number(), v.integer(), v.minValue(1, 'must be at least 1'), v.maxValue(MAX_END_USER_RPM, `must be at most ${MAX_END_USER_RPM}`),
    v.description('The end user\'s own generation starts per minute (GCRA, burst = rpm), over every key of the billing scope; omitted or null = none.')))),
});

export const EndUserBudget = v.object({
  endUser: v.pipe(v.string(), v.description('The end user.')),
  budgetMicros: v.pipe(v.nullable(v.pipe(v.number(), v.integer())), v.description('The cap per period; null = no cap (the use shown is then this calendar month\'s).')),
  period: v.pipe(v.picklist(END_USER_PERIODS), v.description('The cap\'s period (`month` when there is no cap).')),
  rpm: v.pipe(v.nullable(v.pipe(v.number(), v.integer())), v.description('Generation starts per minute; null = none.')),
  periodStart: v.pipe(v.string(), v.isoTimestamp(), v.description('Start of the current period (UTC midnight of the day, or of the month\'s first day).')),
  usedMicros: v.pipe(v.number(), v.integer(), v.description('Settled plus held this period (as `GET /usage` counts `usedMicros`).')),
  heldMicros: v.pipe(v.number(), v.integer(), v.description('Of that, what reservations of generations still running hold.')),
  remainingMicros: v.pipe(v.nullable(v.pipe(v.number(), v.integer())), v.description('budgetMicros − usedMicros (never below 0); null without a cap.')),
  updatedAt: v.pipe(v.nullable(v.pipe(v.string(), v.isoTimestamp())), v.description('When the cap was last set; null without a cap.')),
});

registerSchemas({ EndUserBudget, SetEndUserBudgetRequest });

// ---------------------------------------------------------------- input

/** The `{endUser}` path segment, URL-decoded and checked as a body's `endUser` is. */
export function endUserParam(event: H3Event): string {
  const raw = getRouterParam(event, 'endUser') ?? '';
  let value: string;
  try {
    value = decodeURIComponent(raw);
  } catch {
    throw errors.invalidBody('endUser: must be URL-encoded', [{ path: '/endUser', message: 'must be URL-encoded' }]);
  }
  const p = endUserProblem(value);
  if (p) throw errors.invalidBody(`endUser: ${p}`, [{ path: '/endUser', message: p }]);
  return value;
}

function isWhole(n: unknown, min: number, max: number): n is number {
  return typeof n === 'number' && Number.isInteger(n) && n >= min && n <= max;
}

/** Every problem of a PUT body, as JSON pointers (`/budgetMicros`, `/period`, `/rpm`). */
export function budgetProblems(input: unknown): ErrorDetail[] {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return [{ path: '', message: 'must be a JSON object' }];
  const body = input as Record<string, unknown>;
  const out: ErrorDetail[] = [];
  if (body.budgetMicros === undefined) out.push({ path: '/budgetMicros', message: 'is required' });
  else if (!isWhole(body.budgetMicros, 0, Number.MAX_SAFE_INTEGER)) out.push({ path: '/budgetMicros', message: 'must be a whole number of at least 0' });
  if (body.period === undefined) out.push({ path: '/period', message: 'is required' });
  else if (!END_USER_PERIODS.includes(body.period as EndUserPeriod)) out.push({ path: '/period', message: 'must be one of day, month' });
  if (body.rpm !== undefined && body.rpm !== null && !isWhole(body.rpm, 1, MAX_END_USER_RPM)) {
    out.push({ path: '/rpm', message: `must be null or a whole number from 1 to ${MAX_END_USER_RPM}` });
  }
  for (const k of Object.keys(body)) {
    if (!['budgetMicros', 'period', 'rpm'].includes(k)) out.push({ path: `/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, message: 'is not a known field' });
  }
  return out;
}

/** A PUT body, or the 400 listing every problem (`details`). */
export function parseBudgetInput(input: unknown): EndUserBudgetInput {
  const problems = budgetProblems(input);
  if (problems.length) {
    const first = problems[0]!;
    const field = first.path ? first.path.slice(1) : 'body';
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length === 2 ? '' : 's'}: see details)` : '';
    throw errors.invalidBody(`${field}: ${first.message}${more}`, problems);
  }
  const body = input as { budgetMicros: number; period: EndUserPeriod; rpm?: number | null };
  return { budgetMicros: body.budgetMicros, period: body.period, rpm: body.rpm ?? null };
}

// ---------------------------------------------------------------- service

/** GET /end-users/{endUser}: the cap and this period's use (this month's, without a cap). */
export async function getEndUserBudgetFor(ctx: Context, caller: Caller, endUser: string): Promise<EndUserBudgetJson> {
  const [row] = await getEndUserBudget(ctx.sql, caller.accountId, caller.workspaceId, endUser);
  return row!.b;
}

/** PUT /end-users/{endUser}: sets the cap (audited: end_user.budget_set). */
export async function setEndUserBudgetFor(ctx: Context, caller: Caller, endUser: string, input: EndUserBudgetInput): Promise<EndUserBudgetJson> {
  const [row] = await audited(ctx, caller, (tx) =>
    setEndUserBudget(tx, caller.accountId, caller.workspaceId, endUser, input.budgetMicros, input.period, input.rpm));
  return row!.b;
}

/** DELETE /end-users/{endUser}: removes the cap (audited: end_user.budget_removed); 404 when there is none. */
export async function removeEndUserBudgetFor(ctx: Context, caller: Caller, endUser: string): Promise<void> {
  await audited(ctx, caller, (tx) => removeEndUserBudget(tx, caller.accountId, caller.workspaceId, endUser));
}
