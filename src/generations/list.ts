// GET /generations: a caller's jobs in its key's billing scope, newest first, in keyset pages behind
// an opaque, signed cursor; items are rendered exactly as GET /generations/{id} renders one.

import { createHmac, timingSafeEqual } from 'node:crypto';
import * as v from 'valibot';
import { authorizedCall, callerRead, type AuthorizedCall, type Caller, type CallerRead } from '../auth/access.ts';
import type { Context } from '../context.ts';
import { listGenerations } from '../db/sql/list_generations.ts';
import { listGenerationsForCallers } from '../db/sql/list_generations_for_callers.ts';
import { listGenerationsForKeys, type GenerationPage } from '../db/sql/list_generations_for_keys.ts';
import { readTolerant } from '../db/replica.ts';
import { errors } from '../errors.ts';
import { listBatchGenerations } from '../db/sql/batches.ts';
import { isUuid } from '../schemas.ts';
import { signingKey } from '../internal/signing.ts';
import { registerSchemas } from '../schemas.ts';
import type { AttributionFilter } from './attribution.ts';
import { GenerationStatus, type GenerationStatusBody } from './schemas.ts';
import { generationStats, renderGeneration } from './service.ts';

export const STATUSES = ['pending', 'processing', 'completed', 'failed'] as const;
export const TYPES = ['image', 'code'] as const;
export const DEFAULT_LIST_LIMIT = 20;
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/i;

export const ListGenerationsQuery = {
  limit: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100), v.description(`Page size, 1 to 100. Default ${DEFAULT_LIST_LIMIT}.`)),
  cursor: v.pipe(v.string(), v.description('`nextCursor` of the previous page. Opaque; pass it back unchanged.')),
  status: v.pipe(v.string(), v.description('Only these statuses: one of `pending`, `processing`, `completed`, `failed`, or several separated by commas.')),
  type: v.pipe(v.string(), v.description('Only `image` or only `code` generations.')),
  model: v.pipe(v.string(), v.description('Only generations requested with this model id.')),
  since: v.pipe(v.string(), v.description('Only generations created at or after this time: an RFC 3339 date-time (`2026-11-01T00:00:00Z`) or a UTC date (`2026-11-01`).')),
  batchId: v.pipe(v.string(), v.description('Only the lines of this batch (`POST /batches`); another account\'s batch lists nothing.')),
  endUser: v.pipe(v.string(), v.description('Only generations requested for this `endUser` (docs: Attribution).')),
  metadata: v.pipe(
    v.record(v.string(), v.string()),
    v.description('Only generations whose `metadata` has every pair given, as `metadata[key]=value` (for example `metadata[project]=alpha&metadata[env]=prod`).'),
  ),
};

export const GenerationList = v.object({
  data: v.pipe(v.array(GenerationStatus), v.description('Newest first; each item exactly as `GET /generations/{id}` returns it.')),
  nextCursor: v.pipe(v.nullable(v.string()), v.description('Pass as `cursor` for the next page; null on the last page.')),
});
registerSchemas({ GenerationList });

export type GenerationListBody = v.InferOutput<typeof GenerationList>;

/** A validated list request. */
export interface ListQuery {
  limit: number;
  /** Keyset position: created_at (ISO, microseconds) and id of the last item already seen. */
  before: { at: string; id: string } | null;
  statuses: string | null;
  types: string | null;
  model: string | null;
  since: string | null;
  /** Only the lines of this batch. */
  batchId: string | null;
  /** Only this end user's (docs/api.md, "Attribution"). */
  endUser: string | null;
  /** Only those whose metadata has every one of these pairs. */
  metadata: Record<string, string> | null;
}

type Raw = Partial<Record<Exclude<keyof typeof ListGenerationsQuery, 'endUser' | 'metadata'>, string | undefined>>;

// ---------------------------------------------------------------- cursor

// 8 bytes created_at (epoch µs) + 16 bytes id, then 8 bytes of HMAC: a cursor cannot be forged
// or edited into a position the server never handed out.
const CURSOR_BYTES = 32;

async function mac(ctx: Context, payload: Buffer): Promise<Buffer> {
  return createHmac('sha256', await signingKey(ctx)).update('kiln generations cursor\n').update(payload).digest().subarray(0, 8);
}

export async function encodeCursor(ctx: Context, next: { at: string; id: string }): Promise<string> {
  const payload = Buffer.alloc(24);
  payload.writeBigInt64BE(BigInt(next.at), 0);
  Buffer.from(next.id.replace(/-/g, ''), 'hex').copy(payload, 8);
  return Buffer.concat([payload, await mac(ctx, payload)]).toString('base64url');
}

/** The position of a cursor this server issued; invalid_request for anything else. */
export async function decodeCursor(ctx: Context, cursor: string): Promise<{ at: string; id: string }> {
  const bad = () => errors.invalid('cursor: not a cursor from this list; pass nextCursor back unchanged');
  if (!/^[A-Za-z0-9_-]{43}$/.test(cursor)) throw bad();
  const raw = Buffer.from(cursor, 'base64url');
  if (raw.length !== CURSOR_BYTES) throw bad();
  const payload = raw.subarray(0, 24);
  if (!timingSafeEqual(raw.subarray(24), await mac(ctx, payload))) throw bad();
  const micros = payload.readBigInt64BE(0);
  const hex = payload.subarray(8, 24).toString('hex');
  const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return { at: isoMicros(micros), id };
}

/** Epoch microseconds as an ISO timestamp with all six fraction digits (JS dates stop at ms). */
function isoMicros(micros: bigint): string {
  const ms = micros / 1000n - (micros % 1000n < 0n ? 1n : 0n);
  const frac = ((micros % 1_000_000n) + 1_000_000n) % 1_000_000n;
  return `${new Date(Number(ms)).toISOString().slice(0, 19)}.${String(frac).padStart(6, '0')}Z`;
}

// ---------------------------------------------------------------- query

function list(name: string, raw: string, allowed: readonly string[]): string {
  const items = raw.split(',');
  for (const it of items) {
    if (!allowed.includes(it)) throw errors.invalid(`${name}: must be ${allowed.map((a) => `"${a}"`).join(', ')} (several separated by commas)`);
  }
  return [...new Set(items)].join(',');
}

/** An RFC 3339 date-time or a UTC date, as an ISO timestamp; null when it is not a real instant. */
export function parseInstant(raw: string): string | null {
  const m = DATE_TIME.exec(raw);
  if (!m) return null;
  const [, y, mo, d, h = '0', mi = '0', s = '0', tz] = m;
  const day = new Date(Date.UTC(+y!, +mo! - 1, +d!));
  if (day.getUTCFullYear() !== +y! || day.getUTCMonth() !== +mo! - 1 || day.getUTCDate() !== +d! || +y! < 1970) return null;
  if (+h > 23 || +mi > 59 || +s > 59) return null;
  if (tz && tz.toUpperCase() !== 'Z' && (+tz.slice(1, 3) > 23 || +tz.slice(4) > 59)) return null;
  const t = Date.parse(m[4] ? raw.toUpperCase() : `${raw}T00:00:00Z`);
  return Number.isFinite(t) ? new Date(t).toISOString() : null;
}

/** Reads and checks GET /generations' query; invalid_request names the first bad parameter. */
export async function parseListQuery(ctx: Context, raw: Raw, filter: AttributionFilter = { endUser: null, metadata: null }): Promise<ListQuery> {
  let limit = DEFAULT_LIST_LIMIT;
  if (raw.limit !== undefined) {
    limit = /^\d{1,3}$/.test(raw.limit) ? Number(raw.limit) : NaN;
    if (!(limit >= 1 && limit <= 100)) throw errors.invalid('limit: must be an integer from 1 to 100');
  }
  let model: string | null = null;
  if (raw.model !== undefined) {
    if (!MODEL_ID.test(raw.model)) throw errors.invalid('model: must be a model id from GET /models');
    model = raw.model;
  }
  let since: string | null = null;
  if (raw.since !== undefined) {
    since = parseInstant(raw.since);
    if (!since) throw errors.invalid('since: must be an RFC 3339 date-time (2026-11-01T00:00:00Z) or a date (2026-11-01)');
  }
  if (raw.batchId !== undefined && !isUuid(raw.batchId)) throw errors.invalid('batchId: must be a uuid');
  return {
    limit,
    batchId: raw.batchId?.toLowerCase() ?? null,
    before: raw.cursor !== undefined ? await decodeCursor(ctx, raw.cursor) : null,
    statuses: raw.status !== undefined ? list('status', raw.status, STATUSES) : null,
    types: raw.type !== undefined ? list('type', raw.type, TYPES) : null,
    model,
    since,
    endUser: filter.endUser,
    metadata: filter.metadata,
  };
}

// ---------------------------------------------------------------- the call

/**
 * GET /generations in one round trip: authorizes each key (read scope, the per-key read bucket,
 * its own rpm) and reads its page — the key's account's jobs in the key's billing scope, created
 * through the REST API (what GET /generations/{id} can read) — in the same call.
 */
export const listGenerationsCall: AuthorizedCall<ListQuery, { body: GenerationPage | null }> = authorizedCall(100, (ctx, items) => {
  generationStats.readBatches++;
  generationStats.reads += items.length;
  const q = items.map((i) => i.payload);
  return listGenerationsForKeys(
    ctx.sql, items.map((i) => i.hash), ctx.config.readRpm, 'api', q.map((x) => x.limit),
    q.map((x) => x.before?.at ?? null), q.map((x) => x.before?.id ?? null), q.map((x) => x.statuses),
    q.map((x) => x.types), q.map((x) => x.model), q.map((x) => x.since), q.map((x) => x.endUser), q.map((x) => x.metadata),
  );
});

/** GET /generations on the read replica, for keys the primary authorized (see Access.replicaRead). */
export const listGenerationsReplica: CallerRead<ListQuery, { body: GenerationPage | null }> = callerRead(100, (sql, _ctx, items) => {
  generationStats.readBatches++;
  generationStats.reads += items.length;
  const q = items.map((i) => i.payload);
  return listGenerationsForCallers(
    sql, items.map((i) => i.caller.accountId), items.map((i) => i.caller.workspaceId), 'api', q.map((x) => x.limit),
    q.map((x) => x.before?.at ?? null), q.map((x) => x.before?.id ?? null), q.map((x) => x.statuses),
    q.map((x) => x.types), q.map((x) => x.model), q.map((x) => x.since), q.map((x) => x.endUser), q.map((x) => x.metadata),
  );
});

/** A page as the API answers it: every item rendered by renderGeneration (signed URLs and all). */
export async function renderPage(ctx: Context, page: GenerationPage): Promise<GenerationListBody> {
  const data: GenerationStatusBody[] = await Promise.all(page.data.map((g) => renderGeneration(ctx, g)));
  return { data, nextCursor: page.next ? await encodeCursor(ctx, page.next) : null };
}

/**
 * The list of a caller already authorized (MCP): its account's jobs in its billing scope created
 * through its own origin, as GET /generations answers a key for the REST API's.
 */
export async function listGenerationsOf(ctx: Context, caller: Caller, q: ListQuery): Promise<GenerationListBody> {
  if (q.batchId) return listBatchLines(ctx, caller, q);
  // Tolerates the replica's bounded lag, as GET /generations does.
  const [row] = await readTolerant(ctx, (sql) => listGenerations(
    sql, caller.accountId, caller.workspaceId, caller.origin, q.limit, q.before?.at ?? null, q.before?.id ?? null,
    q.statuses, q.types, q.model, q.since, q.endUser, q.metadata,
  ));
  return renderPage(ctx, row?.body ?? { data: [], next: null });
}

/** GET /generations?batchId=: a page of a batch's lines (the other filters apply within it). */
export async function listBatchLines(ctx: Context, caller: Caller, q: ListQuery): Promise<GenerationListBody> {
  const [row] = await listBatchGenerations(
    ctx.sql, caller.accountId, q.batchId!, q.limit, q.before, q.statuses?.split(',') ?? null, q.types?.split(',') ?? null, q.model, q.since,
    q.endUser, q.metadata,
  );
  return renderPage(ctx, row?.page ?? { data: [], next: null });
}
