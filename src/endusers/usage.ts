// Spend read back by end user and by metadata (docs/usage.md, "Usage by end user and by
// metadata"): GET /usage/daily?groupBy=endUser|metadata.<key> (the daily body plus a keyset page of
// groups per day) and GET /end-users (the billing scope's end users by spend), each one SQL call
// over the roll-ups, behind opaque signed cursors.

import { createHmac, timingSafeEqual } from 'node:crypto';
import * as v from 'valibot';
import { authorizedCall, callerRead, type AuthorizedCall, type CallerRead } from '../auth/access.ts';
import { DailyUsageQuery, MAX_DAILY_RANGE_DAYS, parseDailyRange } from '../billing/daily.ts';
import type { Context } from '../context.ts';
import {
  getDailyUsageGroupsForCallers, getDailyUsageGroupsForKeys, type DailyGroupsArgs, type DailyUsageGroupsJson, type GroupsPosition,
} from '../db/sql/get_daily_usage_groups.ts';
import { listEndUsersForCallers, listEndUsersForKeys, type EndUserPageJson, type EndUsersArgs, type EndUsersPosition } from '../db/sql/list_end_users.ts';
import { errors } from '../errors.ts';
import { endUserProblem } from '../generations/attribution.ts';
import { signingKey } from '../internal/signing.ts';
import { registerSchemas } from '../schemas.ts';

export const DEFAULT_GROUPS_LIMIT = 100;
export const MAX_GROUPS_LIMIT = 1000;
export const DEFAULT_END_USERS_LIMIT = 100;
export const MAX_END_USERS_LIMIT = 1000;

const micros = (d: string) => v.pipe(v.number(), v.integer(), v.description(d));

// ---------------------------------------------------------------- cursors

// A cursor is a position (JSON) and 8 bytes of HMAC under the server's signing secret, with the
// list's name inside the MAC: one cannot be edited, invented or used with another list.
async function mac(ctx: Context, purpose: string, payload: Buffer): Promise<Buffer> {
  return createHmac('sha256', await signingKey(ctx)).update(`kiln ${purpose} cursor\n`).update(payload).digest().subarray(0, 8);
}

async function encodeCursor(ctx: Context, purpose: string, position: unknown): Promise<string> {
  const payload = Buffer.from(JSON.stringify(position), 'utf8');
  return Buffer.concat([payload, await mac(ctx, purpose, payload)]).toString('base64url');
}

async function decodeCursor(ctx: Context, purpose: string, cursor: string, bad: () => Error): Promise<unknown> {
  if (!/^[A-Za-z0-9_-]{12,4000}$/.test(cursor)) throw bad();
  const raw = Buffer.from(cursor, 'base64url');
  if (raw.length < 9) throw bad();
  const payload = raw.subarray(0, raw.length - 8);
  const tag = await mac(ctx, purpose, payload);
  if (!timingSafeEqual(raw.subarray(raw.length - 8), tag)) throw bad();
  try {
    return JSON.parse(payload.toString('utf8'));
  } catch {
    throw bad();
  }
}

function parseLimit(raw: string | undefined, def: number, max: number): number {
  if (raw === undefined) return def;
  const limit = /^\d{1,4}$/.test(raw) ? Number(raw) : NaN;
  if (!(limit >= 1 && limit <= max)) throw errors.invalid(`limit: must be an integer from 1 to ${max}`);
  return limit;
}

// ---------------------------------------------------------------- GET /usage/daily?groupBy=

export const GROUP_BY = /^(?:endUser|metadata\.[A-Za-z0-9_.:-]{1,64})$/;
const GROUP_BY_MESSAGE = 'must be endUser or metadata.<key> (a key of 1 to 64 characters of A-Z, a-z, 0-9, _ . : -)';

export const DailyUsageGroupedQuery = {
  ...DailyUsageQuery,
  groupBy: v.pipe(v.string(), v.regex(GROUP_BY), v.description(
    'Split each day by attribution (docs: Usage by end user and by metadata): `endUser`, or `metadata.<key>` for the values of one metadata key. ' +
    'The body then also has `groupBy`, `groups` and `next_cursor`.')),
  limit: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_GROUPS_LIMIT), v.description(`With \`groupBy\`: groups per page, 1 to ${MAX_GROUPS_LIMIT}. Default ${DEFAULT_GROUPS_LIMIT}.`)),
  cursor: v.pipe(v.string(), v.description('With `groupBy`: `next_cursor` of the previous page. Opaque; pass it back unchanged, with the same `groupBy`.')),
};


/** A validated GET /usage/daily query: the range and, with groupBy, the page. */
export type DailyGroupsQuery = DailyGroupsArgs;

const GROUPS = 'usage groups';

/** Reads and checks GET /usage/daily's query (range as before; groupBy, limit and cursor). */
export async function parseDailyGroupsQuery(ctx: Context, raw: { from?: string; to?: string; groupBy?: string; limit?: string; cursor?: string }): Promise<DailyGroupsQuery> {
  const range = parseDailyRange({ from: raw.from, to: raw.to });
  if (raw.groupBy === undefined) {
    // Without groupBy the body is what it always was, and so is the query: `limit` and `cursor`
    // page groups only, and are ignored here as any other unknown parameter always was.
    return { ...range, groupBy: null, limit: DEFAULT_GROUPS_LIMIT, after: null };
  }
  if (!GROUP_BY.test(raw.groupBy)) {
    throw errors.invalidBody(`groupBy: ${GROUP_BY_MESSAGE}`, [{ path: 'groupBy', message: GROUP_BY_MESSAGE }]);
  }
  const limit = parseLimit(raw.limit, DEFAULT_GROUPS_LIMIT, MAX_GROUPS_LIMIT);
  let after: GroupsPosition | null = null;
  if (raw.cursor !== undefined) {
    const bad = () => errors.invalid('cursor: not a cursor of this groupBy; pass next_cursor back unchanged, with the same groupBy');
    const p = await decodeCursor(ctx, GROUPS, raw.cursor, bad);
    if (!Array.isArray(p) || p.length !== 4 || p[0] !== raw.groupBy || typeof p[1] !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(p[1])
      || !Number.isSafeInteger(p[2]) || !(p[3] === null || typeof p[3] === 'string')) throw bad();
    after = { day: p[1], spend: p[2] as number, group: p[3] as string | null };
  }
  return { ...range, groupBy: raw.groupBy, limit, after };
}

/** The body as the API answers it: SQL's position after the page becomes `next_cursor`. */
export async function renderDailyGroups(ctx: Context, body: DailyUsageGroupsJson, q: DailyGroupsQuery): Promise<DailyUsageGroupsJson & { next_cursor?: string | null }> {
  if (!q.groupBy) return body;
  const { next, ...rest } = body;
  return { ...rest, next_cursor: next ? await encodeCursor(ctx, GROUPS, [q.groupBy, next.day, next.spend, next.group]) : null };
}

/** GET /usage/daily (with or without groupBy) in one round trip: authorizes each key and reads its billing scope. */
export const dailyGroupsCall: AuthorizedCall<DailyGroupsQuery, { body: DailyUsageGroupsJson | null }> = authorizedCall(100, ({ sql, config }, items) =>
  getDailyUsageGroupsForKeys(sql, items.map((i) => i.hash), config.readRpm, items.map((i) => i.payload)));

/** The same on the read replica, for keys the primary authorized (see Access.replicaRead). */
export const dailyGroupsReplica: CallerRead<DailyGroupsQuery, { body: DailyUsageGroupsJson | null }> = callerRead(100, (sql, _ctx, items) =>
  getDailyUsageGroupsForCallers(sql, items.map((i) => i.caller.accountId), items.map((i) => i.caller.workspaceId), items.map((i) => i.payload)));

// ---------------------------------------------------------------- GET /end-users

export const EndUsersQuery = {
  from: v.pipe(v.string(), v.isoDate('must be a date as YYYY-MM-DD'), v.description('First UTC day, `YYYY-MM-DD`. Default: the first day of the current calendar month (UTC).')),
  to: v.pipe(v.string(), v.isoDate('must be a date as YYYY-MM-DD'), v.description(`Last UTC day, \`YYYY-MM-DD\`, at most ${MAX_DAILY_RANGE_DAYS} days after \`from\` counting both. Default: the last day of \`from\`'s month when \`from\` is not given, else today.`)),
  limit: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_END_USERS_LIMIT), v.description(`Page size, 1 to ${MAX_END_USERS_LIMIT}. Default ${DEFAULT_END_USERS_LIMIT}.`)),
  cursor: v.pipe(v.string(), v.description('`nextCursor` of the previous page. Opaque; pass it back unchanged, with the same `from` and `to`.')),
};

export const EndUser = v.object({
  endUser: v.pipe(v.string(), v.description('The `endUser` the app sent with its requests.')),
  usedMicros: micros('Spend over the range: settled charges at their cost plus reservations in flight at their reserved amount (as `used_micros` counts them).'),
  generations: micros('Charges counted over the range (one per billable output): settled ones and reservations in flight.'),
});

export const EndUserList = v.object({
  data: v.pipe(v.array(EndUser), v.description('By `usedMicros` descending, then `endUser`.')),
  nextCursor: v.pipe(v.nullable(v.string()), v.description('Pass as `cursor` for the next page; null on the last page.')),
});
registerSchemas({ EndUser, EndUserList });

export type EndUserListBody = v.InferOutput<typeof EndUserList>;
export type EndUsersQueryArgs = EndUsersArgs;

const END_USERS = 'end-users';

/** The current calendar month (UTC) of `today`, as its first and last day. */
export function monthOf(today: Date): { from: string; to: string } {
  const y = today.getUTCFullYear();
  const m = today.getUTCMonth();
  const day = (d: Date) => d.toISOString().slice(0, 10);
  return { from: day(new Date(Date.UTC(y, m, 1))), to: day(new Date(Date.UTC(y, m + 1, 0))) };
}

/** Reads and checks GET /end-users' query; invalid_request names the first bad parameter. */
export async function parseEndUsersQuery(ctx: Context, raw: { from?: string; to?: string; limit?: string; cursor?: string }, today = new Date()): Promise<EndUsersArgs> {
  const range = raw.from === undefined && raw.to === undefined ? monthOf(today) : parseDailyRange({ from: raw.from, to: raw.to }, today) as { from: string; to: string };
  const limit = parseLimit(raw.limit, DEFAULT_END_USERS_LIMIT, MAX_END_USERS_LIMIT);
  let after: EndUsersPosition | null = null;
  if (raw.cursor !== undefined) {
    const bad = () => errors.invalid('cursor: not a cursor of this list; pass nextCursor back unchanged, with the same from and to');
    const p = await decodeCursor(ctx, END_USERS, raw.cursor, bad);
    if (!Array.isArray(p) || p.length !== 4 || p[0] !== range.from || p[1] !== range.to || !Number.isSafeInteger(p[2])
      || typeof p[3] !== 'string' || endUserProblem(p[3])) throw bad();
    after = { used: p[2] as number, endUser: p[3] };
  }
  return { ...range, limit, after };
}

export async function renderEndUsers(ctx: Context, page: EndUserPageJson, q: EndUsersArgs): Promise<EndUserListBody> {
  return { data: page.data, nextCursor: page.next ? await encodeCursor(ctx, END_USERS, [q.from, q.to, page.next.used, page.next.endUser]) : null };
}

/** GET /end-users in one round trip: authorizes each key and reads its billing scope's page. */
export const endUsersCall: AuthorizedCall<EndUsersArgs, { body: EndUserPageJson | null }> = authorizedCall(100, ({ sql, config }, items) =>
  listEndUsersForKeys(sql, items.map((i) => i.hash), config.readRpm, items.map((i) => i.payload)));

/** The same on the read replica, for keys the primary authorized. */
export const endUsersReplica: CallerRead<EndUsersArgs, { body: EndUserPageJson | null }> = callerRead(100, (sql, _ctx, items) =>
  listEndUsersForCallers(sql, items.map((i) => i.caller.accountId), items.map((i) => i.caller.workspaceId), items.map((i) => i.payload)));
