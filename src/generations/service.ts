// Generation service shared by REST, MCP and workflows: validate and price a request, create it
// (reserve + insert + enqueue in one SQL call), and read it back in the SPEC's status shape.

import { isIP } from 'node:net';
import * as v from 'valibot';
import type { CatalogModel } from '../billing/catalog.ts';
import { cachedEntries, catalogEntry, fallbackChain } from '../billing/catalog.ts';
import type { Context } from '../context.ts';
import { arrayTypesReady } from '../db/pool.ts';
import { cancelGeneration as cancelGenerationSql } from '../db/sql/cancel_generation.ts';
import { cancelGenerationsForKeys, type CancelGenerationsForKeysRow } from '../db/sql/cancel_generations_for_keys.ts';
import { createGenerations, type CreateGenerationsRow } from '../db/sql/create_generations.ts';
import { getGenerations, type GenerationBody } from '../db/sql/get_generations.ts';
import { pollGenerations } from '../db/sql/poll_generations.ts';
import { startGenerations } from '../db/sql/start_generations.ts';
import { ApiError, errors, isDataError, toApiError } from '../errors.ts';
import { errorFields } from '../log.ts';
import { authorizedCall, type AuthorizedCall, type Caller, type Origin } from '../auth/access.ts';
import { isUuid, issueMessage } from '../schemas.ts';
import { withTimeout } from '../db/timeout.ts';
import { isPublicAddress } from '../internal/address.ts';
import { decodeDataUri, DEFAULT_MAX_IMAGE_BYTES, InputError, sniffImage } from '../providers/inputs.ts';
import { maxTokensFor, reserveMicros, type StoredRequest, type TargetLanguage, type TextInput } from '../providers/index.ts';
import { signedUrl } from '../storage/store.ts';
import { byOrd, perOwner, type BatchResult } from '../db/batch.ts';
import type { Idempotency } from '../idempotency.ts';
import { GenerationRequest, type GenerationStatusBody } from './schemas.ts';

export type { Caller, Origin };

export interface PreparedGeneration {
  type: 'image' | 'code';
  modelId: string;
  /** Catalog row version the price was computed from (checked again in SQL). */
  modelVersion: string;
  request: StoredRequest;
  reserveMicros: number;
  /** The request's Idempotency-Key and fingerprint, when it came with one. */
  idempotency?: Idempotency | null;
}

/** The SPEC "Generation accepted" body. */
export interface Accepted {
  id: string;
  status: 'pending';
}

/** A start's answer: the accepted body, and whether it is the stored answer of an earlier request with the same key. */
export interface Started {
  body: Accepted;
  replayed: boolean;
}

// ---------------------------------------------------------------- validation

const MEDIA_OK = /^image\/[a-z0-9.+-]+$/i;

async function checkImageInput(input: { url: string; mediaType?: string }, i: number): Promise<void> {
  try {
    if (/^data:/i.test(input.url)) {
      const decoded = decodeDataUri(input.url, DEFAULT_MAX_IMAGE_BYTES, input.mediaType ?? 'image/png');
      if (!MEDIA_OK.test(decoded.mediaType)) throw new InputError('the data: URI is not an image');
      await sniffImage(decoded.data);
      return;
    }
    const host = new URL(input.url).hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) && !isPublicAddress(host)) throw new InputError('image URL host is not allowed');
    if (/^(localhost|.*\.localhost)$/i.test(host)) throw new InputError('image URL host is not allowed');
  } catch (e) {
    if (e instanceof InputError) throw errors.invalid(`images.${i}.url: ${e.message}`);
    throw errors.invalid(`images.${i}.url: not a usable image`);
  }
}

/** "field: problem" for the first issue; missing fields say so plainly. */
export function validationMessage(issues: readonly v.BaseIssue<unknown>[]): string {
  const issue = issues[0]!;
  const path = v.getDotPath(issue);
  if (path && issue.kind === 'schema' && issue.input === undefined && issue.type === 'object') return `${path}: is required`;
  return issueMessage(issues);
}

/**
 * Validates a request body against every SPEC rule and prices it. Nothing is written.
 * Throws ApiError invalid_request (400) with a "field: message" text.
 */
export async function prepareGeneration(ctx: Context, input: unknown): Promise<PreparedGeneration> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw errors.invalid('The request body must be a JSON object.');
  const parsed = v.safeParse(GenerationRequest, input);
  if (!parsed.success) throw errors.invalid(validationMessage(parsed.issues));
  const body = parsed.output;
  const modelId = body.model ?? (body.type === 'image' ? ctx.config.defaultImageModel : ctx.config.defaultCodeModel);
  const entry = await catalogEntry(ctx, modelId);
  if (!entry) {
    throw errors.invalid(body.model === undefined ? `the default ${body.type} model is not available` : `model: "${modelId}" is not in the catalog`);
  }
  const { model } = entry;
  const wantsImage = body.type === 'image';
  if (wantsImage !== (model.category === 'image')) {
    throw errors.invalid(`model: "${model.id}" is ${model.category === 'image' ? 'an image' : `a ${model.category}`} model and cannot produce ${body.type} output`);
  }
  const images = body.images ?? [];
  if (images.length && !model.supports_image_input) {
    throw errors.invalid(`images: model "${model.id}" does not accept image inputs`);
  }
  let targetLanguage: TargetLanguage = body.targetLanguage ?? (model.category === 'svg' ? 'svg' : 'text');
  if (model.category === 'svg' && targetLanguage !== 'svg' && !body.screenHtml) {
    throw errors.invalid(`targetLanguage: model "${model.id}" produces SVG only; use "svg" or omit it`);
  }
  await Promise.all(images.map((img, i) => checkImageInput(img, i)));

  const textInputs: TextInput[] = (body.textInputs ?? []).map((t) => ({
    content: t.content,
    ...(t.label !== undefined ? { label: t.label } : {}),
    ...(t.language !== undefined ? { language: t.language } : {}),
  }));
  const screenHtml = body.screenHtml ?? false;
  const maxTokens = maxTokensFor(model);
  const request: StoredRequest = {
    type: body.type,
    prompt: body.prompt,
    images: images.map((img) => ({ url: img.url, mediaType: img.mediaType ?? 'image/png' })),
    textInputs,
    aspectRatio: body.aspectRatio ?? '1:1',
    targetLanguage,
    screenHtml,
    maxTokens,
    model,
  };
  if (model.fallbacks?.length) {
    // From the cache only (it holds every enabled entry): a disabled or unknown fallback id must
    // not cost each POST a lookup. A fallback enabled less than the cache's TTL ago joins later.
    const entries = await cachedEntries(ctx);
    const chain = fallbackChain(model, model.fallbacks.map((id) => entries.get(id)?.model), images.length);
    if (chain.length) request.fallbacks = chain;
  }
  let reserve: number;
  try {
    reserve = priceRequest(request);
  } catch {
    throw errors.invalid(`model: "${model.id}" has no usable price`);
  }
  return { type: body.type, modelId: model.id, modelVersion: entry.version, request, reserveMicros: reserve };
}

/**
 * The worst-case cost of executing a request: what is reserved before the provider is called
 * (a POST at creation, a run output when its inputs are known). The one pricing function.
 */
export function priceRequest(req: StoredRequest): number {
  let worst = priceWith(req, req.model, req.maxTokens);
  for (const m of req.fallbacks ?? []) worst = Math.max(worst, priceWith(req, m, maxTokensFor(m)));
  return worst;
}

function priceWith(req: StoredRequest, model: CatalogModel, maxTokens: number): number {
  if (req.type === 'image') return reserveMicros(model, { type: 'image' });
  return reserveMicros(model, {
    type: 'code', prompt: req.prompt, targetLanguage: req.targetLanguage, screenHtml: req.screenHtml,
    textInputs: req.textInputs, imageCount: req.images.length, maxTokens,
  });
}

// ---------------------------------------------------------------- creating

interface CreateItem {
  caller: Caller;
  p: PreparedGeneration;
}

/** A create may wait on budget-row locks; past this it fails closed (503) rather than hang. */
const CREATE_TIMEOUT_MS = 15_000;
/** Counters for the benchmark report (mean batch sizes). */
export const generationStats = { createBatches: 0, creates: 0, readBatches: 0, reads: 0 };

const creatorFor = perOwner<Context, CreateItem, Started>(50, (ctx) => async (items) => {
  const sql = ctx.sql;
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
 * Returns the SPEC "Generation accepted" body. Throws ApiError: invalid_request (400),
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
      return await creatorFor(ctx).add({ caller, p: prepared });
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

// ---------------------------------------------------------------- reading

/** The row shape returned by kiln.get_generation. */
export type GenerationRow = GenerationBody;

/** SPEC "Generation status": ImageResult with a freshly signed URL, or CodeResult. */
export async function renderGeneration(ctx: Context, row: GenerationRow): Promise<GenerationStatusBody> {
  let result: GenerationStatusBody['result'] = null;
  if (row.status === 'completed' && row.result) {
    const costMicros = Number(row.cost_micros ?? 0);
    if (row.result.type === 'image') {
      // Retention removed the image: the record and cost stay, the URL goes.
      const expiredAt = row.result.expiredAt;
      result = {
        type: 'image',
        url: row.result.path && !expiredAt ? await signedUrl(ctx, row.result.path) : null,
        mediaType: row.result.mediaType ?? null,
        aspectRatio: row.result.aspectRatio ?? '1:1',
        costMicros,
        ...(row.result.model ? { model: row.result.model } : {}),
        ...(expiredAt ? { expiredAt } : {}),
      };
    } else {
      result = {
        type: 'code', code: row.result.code ?? null, structuredOutput: row.result.structuredOutput ?? null, costMicros,
        ...(row.result.model ? { model: row.result.model } : {}),
      };
    }
  }
  return {
    id: row.id, status: row.status, result, error: row.status === 'failed' ? row.error ?? 'generation failed' : null,
    ...(typeof row.prompt === 'string' ? { prompt: row.prompt } : {}),
  };
}

interface GetItem {
  accountId: string;
  id: string;
  origins: Origin[];
}

const readerFor = perOwner<Context, GetItem, GenerationRow | null>(100, (ctx) => async (items) => {
  const sql = ctx.sql;
  await arrayTypesReady(sql);
  generationStats.readBatches++;
  generationStats.reads += items.length;
  // One call per distinct origin set (REST always asks for ['api']).
  const out: Array<BatchResult<GenerationRow | null>> = items.map(() => ({ ok: null }));
  const groups = new Map<string, number[]>();
  items.forEach((it, i) => {
    const k = it.origins.join(',');
    groups.set(k, [...(groups.get(k) ?? []), i]);
  });
  for (const idx of groups.values()) {
    const rows = await withTimeout(
      getGenerations(sql, idx.map((i) => items[i]!.accountId), idx.map((i) => items[i]!.id), items[idx[0]!]!.origins),
      ctx.config.limiterTimeoutMs,
    );
    for (const r of rows) out[idx[r.ord - 1]!] = { ok: r.body };
  }
  return out;
});

/** Generations a caller may read: REST sees its own API jobs; MCP its own MCP and API jobs (never app or workflow internals). */
export function visibleOrigins(caller: Caller): Origin[] {
  return caller.origin === 'mcp' ? ['mcp', 'api'] : ['api'];
}

/**
 * A generation of the caller's account that the caller may see (visibleOrigins), as stored; null
 * when there is none. No authorization: for reading again a generation the caller was already
 * authorized for (a wait, an event stream). Batched with concurrent reads.
 */
export function readGeneration(ctx: Context, caller: Caller, id: string): Promise<GenerationRow | null> {
  return readerFor(ctx).add({ accountId: caller.accountId, id: id.toLowerCase(), origins: visibleOrigins(caller) });
}

/**
 * A generation of the caller's account that the caller may see (visibleOrigins), in the SPEC
 * "Generation status" shape. Throws ApiError invalid_request for a malformed id, not_found for
 * unknown / another account's / another origin's, server_error 503 when the database is
 * briefly unavailable.
 */
export async function getGeneration(ctx: Context, caller: Caller, id: string): Promise<GenerationStatusBody> {
  if (!isUuid(id)) throw errors.invalid('id: must be a uuid');
  let row: GenerationRow | null;
  try {
    row = await readGeneration(ctx, caller, id);
  } catch (e) {
    throw toApiError(e).status >= 500 ? errors.unavailable() : toApiError(e);
  }
  if (!row) throw errors.notFound('Generation');
  return renderGeneration(ctx, row);
}

/**
 * GET /generations/{id} in one round trip: authorizes each (hashed) key — read scope, the
 * per-key read bucket, its own rpm — and reads its generation (created through the API) in the
 * same call; `body` is null when there is none the key's account may see.
 */
export const pollGenerationCall: AuthorizedCall<string, { body: GenerationRow | null }> = authorizedCall(100, (ctx, items) => {
  const sql = ctx.sql;
  generationStats.readBatches++;
  generationStats.reads += items.length;
  return pollGenerations(sql, items.map((i) => i.hash), ctx.config.readRpm, items.map((i) => i.payload), 'api');
});

// ---------------------------------------------------------------- canceling

/** What kiln.cancel_generations_for_keys adds to the authorization columns. */
export type CancelColumns = Pick<CancelGenerationsForKeysRow, 'outcome' | 'body'>;

/**
 * POST /generations/{id}/cancel in one round trip: authorizes each (hashed) key — write scope,
 * the per-key read bucket (a cancel costs what a poll costs), its own rpm — and cancels its
 * generation (created through the API) in the same transaction.
 */
export const cancelGenerationCall: AuthorizedCall<string, CancelColumns> = authorizedCall(100, ({ sql, config }, items) =>
  cancelGenerationsForKeys(sql, items.map((i) => i.hash), config.readRpm, items.map((i) => i.payload), 'api'));

/**
 * The answer to a cancel: the canceled generation in the SPEC "Generation status" shape, or
 * not_found (unknown, another account's or another origin's) / conflict (it had already ended).
 */
export async function canceledGeneration(ctx: Context, row: CancelColumns): Promise<GenerationStatusBody> {
  if (row.outcome === 'conflict') {
    throw errors.conflict(`The generation has already ${row.body?.status === 'completed' ? 'completed' : 'failed'}; only a pending or processing generation can be canceled.`);
  }
  if (row.outcome !== 'canceled' || !row.body) throw errors.notFound('Generation');
  return renderGeneration(ctx, row.body);
}

/**
 * Cancels a generation the caller may see (visibleOrigins): failed with error `canceled`, its
 * reservation released, its provider call aborted wherever it runs. Throws ApiError
 * invalid_request (malformed id), not_found, conflict (already ended).
 */
export async function cancelGeneration(ctx: Context, caller: Caller, id: string): Promise<GenerationStatusBody> {
  if (!isUuid(id)) throw errors.invalid('id: must be a uuid');
  const [{ c }] = await cancelGenerationSql(ctx.sql, caller.accountId, id.toLowerCase(), visibleOrigins(caller));
  return canceledGeneration(ctx, { outcome: c.outcome, body: c.body ?? null });
}
