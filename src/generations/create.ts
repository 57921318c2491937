// Creating a generation for REST, MCP and anything else that starts one: reserve the worst case,
// insert and enqueue in one SQL call, batched with concurrent calls (POST /generations also
// authorizes in that call), after its request was validated and priced (./prepare.ts).

import { catalogEntry } from '../billing/catalog.ts';
import type { Context } from '../context.ts';
import { arrayTypesReady } from '../db/pool.ts';
import { createGenerations, type CreateGenerationsRow } from '../db/sql/create_generations.ts';
import { startGenerations } from '../db/sql/start_generations.ts';
import { ApiError, errors, isDataError, toApiError } from '../errors.ts';
import { errorFields } from '../log.ts';
import { authorizedCall, type AuthorizedCall, type Caller } from '../auth/access.ts';
import { withTimeout } from '../db/timeout.ts';
import { byOrd, perOwner } from '../db/batch.ts';
import { currentQueryParent } from '../db/query-parent.ts';
import { bindPool } from '../telemetry/pool.ts';
import type { Idempotency } from '../idempotency.ts';
import { prepareGeneration, type PreparedGeneration } from './prepare.ts';
import { generationStats } from './service.ts';

/** The `GenerationAccepted` body (POST /generations' 202). */
export interface Accepted {
  id: string;
  status: 'pending';
}

/** A start's answer: the accepted body, and whether it is the stored answer of an earlier request with the same key. */
export interface Started {
  body: Accepted;
  replayed: boolean;
}

interface CreateItem {
  caller: Caller;
  p: PreparedGeneration;
}

/** A create may wait on budget-row locks; past this it fails closed (503) rather than hang. */
const CREATE_TIMEOUT_MS = 15_000;

const creatorFor = perOwner<Context, CreateItem, Started>(50, (ctx) => async (items) => {
  // Traced under the batch's first traced request (read before the first await).
  const parent = currentQueryParent();
  const sql = parent ? bindPool(ctx.sql, parent) : ctx.sql;
  await arrayTypesReady(sql);
  generationStats.createBatches++;
  generationStats.creates += items.length;
  const keyed = items.some((i) => i.p.idempotency);
  const rows = await withTimeout(
    createGenerations(sql, {
      accountIds: items.map((i) => i.caller.accountId), keyIds: items.map((i) => i.caller.keyId), workspaceIds: items.map((i) => i.caller.workspaceId),
      origins: items.map((i) => i.caller.origin), types: items.map((i) => i.p.type), modelIds: items.map((i) => i.p.modelId),
      modelVersions: items.map((i) => i.p.modelVersion), requests: items.map((i) => JSON.stringify(i.p.request)),
      reserves: items.map((i) => String(i.p.reserveMicros)), maxAttempts: items.map(() => ctx.config.generationMaxAttempts),
      idemKeys: keyed ? items.map((i) => i.p.idempotency?.key ?? null) : null,
      fingerprints: keyed ? items.map((i) => i.p.idempotency?.fingerprint ?? null) : null,
      idemTtlSeconds: ctx.config.idempotencyTtlSeconds,
    }),
    CREATE_TIMEOUT_MS,
  );
  return byOrd<CreateGenerationsRow, Started>(items.length, rows, (r) =>
    r.id
      ? { ok: { body: { id: r.id, status: 'pending' }, replayed: r.replayed } }
      : { error: Object.assign(new Error(String(r.error_message)), { code: r.error_code }) });
});

/**
 * Starts a generation for an already-authorized caller: validates and prices `input`, then
 * reserves the worst case, inserts and enqueues in one transaction (batched with concurrent
 * calls). Used by REST (origin api), MCP tools (origin mcp) and anything else that starts one.
 * Returns the `GenerationAccepted` body. Throws ApiError: invalid_request (400),
 * insufficient_quota (429), payment_required (402), or server_error (503 when the database is
 * briefly unavailable).
 */
export async function createGeneration(ctx: Context, caller: Caller, input: unknown): Promise<Accepted> {
  return (await startGeneration(ctx, caller, input, null)).body;
}

/**
 * createGeneration with an Idempotency-Key (null: none): a repeat of an accepted request with
 * the same key and body answers its id (`replayed`) and starts nothing; another body with that
 * key throws idempotency_conflict (422). A refused request leaves its key free.
 */
export async function startGeneration(ctx: Context, caller: Caller, input: unknown, idempotency: Idempotency | null): Promise<Started> {
  let prepared = { ...(await prepareGeneration(ctx, input)), idempotency };
  for (let attempt = 0; ; attempt++) {
    try {
      return await creatorFor(ctx).add({ caller, p: prepared }, ctx.span);
    } catch (e) {
      // The cached catalog price was stale: re-read the entry and price again, once.
      if (codeOf(e) === 'KS001' && attempt === 0) {
        await catalogEntry(ctx, prepared.modelId, true);
        prepared = { ...(await prepareGeneration(ctx, input)), idempotency };
        continue;
      }
      throw creationError(ctx, e);
    }
  }
}

/** The `code` of a thrown value (a SQLSTATE, KILN_TIMEOUT), when it has a string one. */
function codeOf(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

function creationError(ctx: Context, e: unknown): ApiError {
  if (codeOf(e) === 'KS001') return errors.unavailable('The model catalog is changing. Retry with backoff.');
  if (codeOf(e) === 'KILN_TIMEOUT') return errors.unavailable();
  if (e instanceof ApiError) return e;
  const api = toApiError(e);
  if (api.status === 500) {
    ctx.log.error('create generation failed', { code: codeOf(e), message: String((e as { message?: unknown } | null | undefined)?.message ?? e).slice(0, 300) });
  } else if (isDataError(e)) {
    ctx.log.warn('create generation: a value got past the checks before SQL', errorFields(e));
  }
  return api;
}

/** What kiln.start_generations adds to the authorization columns for each request. */
export interface StartColumns {
  id: string | null;
  error_code: string | null;
  error_message: string | null;
  replayed: boolean | null;
}

/**
 * POST /generations in one round trip: authenticates each (hashed) key — write scope, its own
 * rpm — and reserves, inserts and enqueues its prepared generation, in one transaction batched
 * with concurrent calls. A keyed request's claim is one more insert in that transaction; a batch
 * without keys passes none.
 */
export const startGenerationCall: AuthorizedCall<PreparedGeneration, StartColumns> = authorizedCall(50, (ctx, items) => {
  const sql = ctx.sql;
  generationStats.createBatches++;
  generationStats.creates += items.length;
  const keyed = items.some((i) => i.payload.idempotency);
  return startGenerations(sql, {
    keyHashes: items.map((i) => i.hash), origin: 'api', types: items.map((i) => i.payload.type),
    modelIds: items.map((i) => i.payload.modelId), modelVersions: items.map((i) => i.payload.modelVersion),
    requests: items.map((i) => JSON.stringify(i.payload.request)),
    reserves: items.map((i) => i.payload.reserveMicros), maxAttempts: ctx.config.generationMaxAttempts,
    idemKeys: keyed ? items.map((i) => i.payload.idempotency?.key ?? null) : null,
    fingerprints: keyed ? items.map((i) => i.payload.idempotency?.fingerprint ?? null) : null,
    idemTtlSeconds: ctx.config.idempotencyTtlSeconds,
  });
}, () => CREATE_TIMEOUT_MS);

/**
 * The outcome of an authorized start_generations row: the accepted body, or the request's own
 * error. A stale cached catalog price (KS001) is priced again and created on the plain path.
 */
export async function acceptStarted(ctx: Context, caller: Caller, row: StartColumns, prepared: PreparedGeneration, input: unknown): Promise<Started> {
  if (row.id) return { body: { id: row.id, status: 'pending' }, replayed: row.replayed === true };
  if (row.error_code === 'KS001') {
    await catalogEntry(ctx, prepared.modelId, true);
    return startGeneration(ctx, caller, input, prepared.idempotency ?? null);
  }
  throw creationError(ctx, Object.assign(new Error(row.error_message ?? 'generation not created'), { code: row.error_code }));
}
