// Generation service shared by REST, MCP, the live views and event bodies: read a generation back
// in the `GenerationStatus` shape, and cancel one. Validating and pricing a request is ./prepare.ts,
// creating it ./create.ts.

import { countGeneration } from '../telemetry/metrics.ts';
import type { Context } from '../context.ts';
import { arrayTypesReady } from '../db/pool.ts';
import { cancelGeneration as cancelGenerationSql } from '../db/sql/cancel_generation.ts';
import { cancelGenerationsForKeys, type CancelGenerationsForKeysRow } from '../db/sql/cancel_generations_for_keys.ts';
import { getGenerations, type GenerationBody } from '../db/sql/get_generations.ts';
import { pollGenerations } from '../db/sql/poll_generations.ts';
import { errors, toApiError } from '../errors.ts';
import { authorizedCall, type AuthorizedCall, type Caller, type Origin } from '../auth/access.ts';
import { isUuid } from '../schemas.ts';
import { withTimeout } from '../db/timeout.ts';
import { signedUrl } from '../storage/store.ts';
import { perOwner, type BatchResult } from '../db/batch.ts';
import { currentQueryParent } from '../db/query-parent.ts';
import { bindPool } from '../telemetry/pool.ts';
import type { GenerationStatusBody } from './schemas.ts';

export type { Caller, Origin };

/** Counters for the benchmark report (mean batch sizes). */
export const generationStats = { createBatches: 0, creates: 0, readBatches: 0, reads: 0 };

// ---------------------------------------------------------------- reading

/** The row shape returned by kiln.get_generation. */
export type GenerationRow = GenerationBody;

/** `GenerationStatus`: ImageResult with a freshly signed URL, or CodeResult. */
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
    ...(row.batch_id ? { batchId: row.batch_id, customId: row.custom_id ?? '' } : {}),
    ...(row.end_user != null ? { endUser: row.end_user } : {}),
    ...(row.metadata != null ? { metadata: row.metadata } : {}),
  };
}

interface GetItem {
  accountId: string;
  id: string;
  origins: Origin[];
}

const readerFor = perOwner<Context, GetItem, GenerationRow | null>(100, (ctx) => async (items) => {
  // Traced under the batch's first traced request (read before the first await).
  const parent = currentQueryParent();
  const sql = parent ? bindPool(ctx.sql, parent) : ctx.sql;
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
  return readerFor(ctx).add({ accountId: caller.accountId, id: id.toLowerCase(), origins: visibleOrigins(caller) }, ctx.span);
}

/**
 * A generation of the caller's account that the caller may see (visibleOrigins), in the
 * `GenerationStatus` shape. Throws ApiError invalid_request for a malformed id, not_found for
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
export type CancelColumns = Pick<CancelGenerationsForKeysRow, 'outcome' | 'body'> & { model_id?: string | null };

/**
 * POST /generations/{id}/cancel in one round trip: authorizes each (hashed) key — write scope,
 * the per-key read bucket (a cancel costs what a poll costs), its own rpm — and cancels its
 * generation (created through the API) in the same transaction.
 */
export const cancelGenerationCall: AuthorizedCall<string, CancelColumns> = authorizedCall(100, ({ sql, config }, items) =>
  cancelGenerationsForKeys(sql, items.map((i) => i.hash), config.readRpm, items.map((i) => i.payload), 'api'));

/**
 * The answer to a cancel: the canceled generation in the `GenerationStatus` shape, or
 * not_found (unknown, another account's or another origin's) / conflict (it had already ended).
 */
export async function canceledGeneration(ctx: Context, row: CancelColumns): Promise<GenerationStatusBody> {
  if (row.outcome === 'conflict') {
    throw errors.conflict(`The generation has already ${row.body?.status === 'completed' ? 'completed' : 'failed'}; only a pending or processing generation can be canceled.`);
  }
  if (row.outcome !== 'canceled' || !row.body) throw errors.notFound('Generation');
  // Settled here (the cancel's process), so counted here, under the generation's model.
  countGeneration(row.body.type, row.model_id, 'canceled');
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
  return canceledGeneration(ctx, { outcome: c.outcome, body: c.body ?? null, model_id: c.model_id });
}
