// POST /batches (docs/api.md, "Batches"): a JSON Lines body in OpenAI's batch input format,
// validated all or nothing — every problem of every line, as JSON pointers — before anything is
// stored or reserved; then the batch and its lines (pending generations) in one transaction.

import type { Caller } from '../auth/access.ts';
import type { Context } from '../context.ts';
import { createBatch as createBatchSql, type BatchJson } from '../db/sql/batches.ts';
import { ApiError, endUserRequired, errors, type ErrorDetail } from '../errors.ts';
import { batchPriced } from '../billing/catalog.ts';
import { prepareGeneration, priceRequest, type PreparedGeneration } from '../generations/prepare.ts';
import { unstorableValue } from '../http/storable.ts';
import { fingerprint } from '../idempotency.ts';
import { BATCH_LINE_URL, MAX_BATCH_LINES } from './schemas.ts';

/** A validated batch: its lines, in order, each with its custom_id and prepared request. */
export interface PreparedBatch {
  lines: Array<{ customId: string; prepared: PreparedGeneration; line: number }>;
  /** SHA-256 of the body (for an Idempotency-Key): the same file replays, another conflicts. */
  fingerprint: Buffer;
}

/**
 * A line as a batch bills it: its model and fallbacks at their batch markup (docs/providers.md,
 * "Model catalog"), and its worst case priced again from them. The stored request carries these
 * entries, so the reservation when the line starts and its settled charge both use them.
 */
function batchPricedLine(p: PreparedGeneration): PreparedGeneration {
  const model = batchPriced(p.request.model);
  const fallbacks = p.request.fallbacks?.map(batchPriced);
  if (model === p.request.model && (fallbacks ?? []).every((m, i) => m === p.request.fallbacks![i])) return p;
  const request = { ...p.request, model, ...(fallbacks ? { fallbacks } : {}) };
  return { ...p, request, reserveMicros: priceRequest(request) };
}

/** "images.0.url: not a usable image" → ["/images/0/url", "not a usable image"]. */
function pointerOf(message: string): [string, string] {
  const m = /^([A-Za-z_][\w]*(?:\.[\w]+)*): (.*)$/s.exec(message);
  if (!m) return ['', message];
  return [`/${m[1]!.split('.').join('/')}`, m[2]!];
}

/**
 * Parses and validates a batch body. Throws ApiError invalid_request with `details` (every
 * problem, as `/lines/N/…` pointers, lines counted from 1) when anything is wrong.
 */
export async function prepareBatch(ctx: Context, raw: Buffer): Promise<PreparedBatch> {
  const text = raw.toString('utf8');
  const details: ErrorDetail[] = [];
  const lines: PreparedBatch['lines'] = [];
  const seen = new Map<string, number>();
  const physical = text.split('\n');
  let count = 0;
  for (let i = 0; i < physical.length; i++) {
    const src = physical[i]!.replace(/\r$/, '');
    if (src.trim() === '') continue;
    count++;
    const n = i + 1;
    const at = (p: string, message: string) => details.push({ path: `/lines/${n}${p}`, message });
    if (count > MAX_BATCH_LINES) {
      throw errors.invalidBody(`A batch has at most ${MAX_BATCH_LINES} lines.`, [{ path: `/lines/${n}`, message: `a batch has at most ${MAX_BATCH_LINES} lines` }]);
    }
    let line: unknown;
    try {
      line = JSON.parse(src);
    } catch {
      at('', 'not valid JSON');
      continue;
    }
    if (typeof line !== 'object' || line === null || Array.isArray(line)) {
      at('', 'must be a JSON object with custom_id, method, url and body');
      continue;
    }
    const bad = unstorableValue(line, { strings: src.includes('\\u'), root: 'line' });
    if (bad) {
      at('', bad);
      continue;
    }
    const l = line as Record<string, unknown>;
    let customId: string | null = null;
    if (typeof l.custom_id !== 'string' || l.custom_id.length < 1 || l.custom_id.length > 64) {
      at('/custom_id', 'must be a string of 1 to 64 characters');
    } else if (seen.has(l.custom_id)) {
      at('/custom_id', `duplicates the custom_id of line ${seen.get(l.custom_id)}`);
    } else {
      customId = l.custom_id;
      seen.set(customId, n);
    }
    if (l.method !== 'POST') at('/method', 'must be "POST"');
    if (l.url !== BATCH_LINE_URL) at('/url', `must be "${BATCH_LINE_URL}"`);
    let prepared: PreparedGeneration | null = null;
    try {
      prepared = batchPricedLine(await prepareGeneration(ctx, l.body));
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      if (e.details) {
        // Problems listed with pointers (attribution): each under the line's body.
        for (const d of e.details) at(`/body${d.path}`, d.message);
      } else {
        const [p, message] = pointerOf(e.message);
        at(`/body${p}`, message);
      }
    }
    if (customId !== null && prepared) lines.push({ customId, prepared, line: n });
  }
  if (count === 0) throw errors.invalidBody('The batch has no lines.', [{ path: '/lines', message: 'at least one line is required' }]);
  if (details.length) {
    const first = details.slice(0, 3).map((d) => `${d.path}: ${d.message}`).join('; ');
    throw errors.invalidBody(`The batch has ${details.length} problem${details.length === 1 ? '' : 's'}: ${first}${details.length > 3 ? '; …' : ''}. Nothing was created.`, details);
  }
  return { lines, fingerprint: fingerprint(text) };
}

export type CreatedBatch = { batch: BatchJson; replayed: boolean };

/** Creates a validated batch for an authorized caller (one transaction: the batch, its lines, the first jobs). */
export async function createBatch(ctx: Context, caller: Caller, batch: PreparedBatch, idemKey: string | null): Promise<CreatedBatch> {
  const [{ r }] = await createBatchSql(ctx.sql, {
    accountId: caller.accountId, workspaceId: caller.workspaceId, keyId: caller.keyId, origin: caller.origin,
    customIds: batch.lines.map((l) => l.customId),
    types: batch.lines.map((l) => l.prepared.type),
    modelIds: batch.lines.map((l) => l.prepared.modelId),
    requests: batch.lines.map((l) => JSON.stringify(l.prepared.request)),
    reserves: batch.lines.map((l) => String(l.prepared.reserveMicros)),
    maxAttempts: ctx.config.generationMaxAttempts,
    idemKey, fingerprint: idemKey ? batch.fingerprint : null, idemTtlSeconds: ctx.config.idempotencyTtlSeconds,
  });
  if (r.outcome === 'end_user_required') {
    // The key was made with requireEndUser: every line without an endUser, by its pointer.
    const missing = (r.lines ?? []).map((i) => `/lines/${batch.lines[i - 1]!.line}/body`);
    const details = missing.map((p) => endUserRequired(undefined, p).details![0]!);
    const first = details.slice(0, 3).map((d) => d.path).join(', ');
    throw errors.invalidBody(`This API key requires an end user (requireEndUser): ${details.length} line${details.length === 1 ? ' lacks' : 's lack'} endUser (${first}${details.length > 3 ? ', …' : ''}). Nothing was created.`, details);
  }
  if (r.outcome === 'conflict') throw new ApiError('idempotency_conflict', 'This Idempotency-Key was already used with a different batch; use a new key for a new batch.');
  if (r.outcome === 'pending') throw new ApiError('conflict', 'A batch with this Idempotency-Key is still being created; retry.', { headers: { 'retry-after': '1' } });
  return { batch: r.batch!, replayed: r.outcome === 'replayed' };
}
