// POST /batches (docs/api.md, "Batches"): a JSON Lines body in OpenAI's batch input format,
// validated all or nothing — every problem of every line, as JSON pointers — and stored in one
// transaction: the batch row, then its lines (pending generations) a chunk at a time as each chunk
// passes validation, then its first jobs last. Any problem rolls the transaction back, so nothing
// is stored, reserved or run. Only the body's bytes and one chunk of parsed lines are held at once;
// each catalog entry is stored once per batch (its lines name it by a key).

import type { Caller } from '../auth/access.ts';
import type { Context } from '../context.ts';
import { addBatchLines, closeBatch, openBatch, type BatchJson } from '../db/sql/batches.ts';
import { ApiError, endUserRequired, errors, type ErrorDetail } from '../errors.ts';
import { batchPriced } from '../billing/catalog.ts';
import { prepareGeneration, priceRequest, type PreparedGeneration } from '../generations/prepare.ts';
import { unstorableValue } from '../http/storable.ts';
import { createHash } from 'node:crypto';
import type { CatalogModel } from '../billing/catalog.ts';
import { BATCH_LINE_URL, MAX_BATCH_LINES } from './schemas.ts';

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

/** Lines validated and stored per round trip. */
const CHUNK_LINES = 2000;
const NEWLINE = 0x0a;

/** Each physical line of the body (without its `\n`, `\r` stripped), decoded one at a time. */
function* physicalLines(raw: Buffer): Generator<{ n: number; src: string }> {
  let start = 0;
  for (let n = 1; start <= raw.length; n++) {
    let end = raw.indexOf(NEWLINE, start);
    if (end < 0) end = raw.length;
    const src = raw.toString('utf8', start, end);
    yield { n, src: src.endsWith('\r') ? src.slice(0, -1) : src };
    start = end + 1;
  }
}

/**
 * Counts the batch's lines (blank lines aside) and fingerprints the body for an Idempotency-Key:
 * SHA-256 of the body as one JSON string, as `fingerprint(text)` hashes it (src/idempotency.ts),
 * fed a line at a time so that no copy of the whole body is made.
 */
function scanBody(raw: Buffer): { count: number; fingerprint: Buffer } {
  const hash = createHash('sha256').update('"');
  let start = 0;
  let count = 0;
  for (let n = 1; start <= raw.length; n++) {
    let end = raw.indexOf(NEWLINE, start);
    const last = end < 0;
    if (last) end = raw.length;
    const text = raw.toString('utf8', start, end);
    hash.update(JSON.stringify(text).slice(1, -1));
    if (!last) hash.update('\\n');
    if (text.trim() !== '') {
      count++;
      if (count > MAX_BATCH_LINES) {
        throw errors.invalidBody(`A batch has at most ${MAX_BATCH_LINES} lines.`, [{ path: `/lines/${n}`, message: `a batch has at most ${MAX_BATCH_LINES} lines` }]);
      }
    }
    start = end + 1;
  }
  return { count, fingerprint: hash.update('"').digest() };
}

/** Catalog entries of a batch, stored once (kiln.add_batch_lines): each line names its entries by key. */
class ModelKeys {
  private readonly keys = new Map<CatalogModel, string>();
  private readonly json = new Map<string, string>();
  /** Entries added since the last take(): sent with the chunk that first uses them. */
  private fresh: Record<string, CatalogModel> = {};

  key(m: CatalogModel): string {
    let k = this.keys.get(m);
    if (k !== undefined) return k;
    // The same entry as another object (a batch price made per line): the same key.
    const text = JSON.stringify(m);
    k = m.id;
    for (let i = 2; this.json.has(k) && this.json.get(k) !== text; i++) k = `${m.id}#${i}`;
    if (!this.json.has(k)) {
      this.json.set(k, text);
      this.fresh[k] = m;
    }
    this.keys.set(m, k);
    return k;
  }

  take(): Record<string, CatalogModel> | null {
    const out = this.fresh;
    this.fresh = {};
    return Object.keys(out).length ? out : null;
  }
}

interface ChunkLine { customId: string; prepared: PreparedGeneration; line: number }

/**
 * Validates one line; its problems go to `details` (pointers `/lines/N/…`, lines counted from 1).
 * Returns the line when it is valid.
 */
async function validateLine(ctx: Context, n: number, src: string, seen: Map<string, number>, details: ErrorDetail[]): Promise<ChunkLine | null> {
  const at = (p: string, message: string) => details.push({ path: `/lines/${n}${p}`, message });
  let line: unknown;
  try {
    line = JSON.parse(src);
  } catch {
    at('', 'not valid JSON');
    return null;
  }
  if (typeof line !== 'object' || line === null || Array.isArray(line)) {
    at('', 'must be a JSON object with custom_id, method, url and body');
    return null;
  }
  const bad = unstorableValue(line, { strings: src.includes('\\u'), root: 'line' });
  if (bad) {
    at('', bad);
    return null;
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
  return customId !== null && prepared ? { customId, prepared, line: n } : null;
}

/** The problems as the 400 says them (the first three in the message, every one in details). */
function invalidBatch(details: ErrorDetail[]): ApiError {
  const first = details.slice(0, 3).map((d) => `${d.path}: ${d.message}`).join('; ');
  return errors.invalidBody(`The batch has ${details.length} problem${details.length === 1 ? '' : 's'}: ${first}${details.length > 3 ? '; …' : ''}. Nothing was created.`, details);
}

export type CreatedBatch = { batch: BatchJson; replayed: boolean };

/**
 * Validates a batch body and creates the batch for an authorized caller, in one transaction (see
 * the top of the file). Throws ApiError invalid_request with `details` (every problem, as
 * `/lines/N/…` pointers) when anything is wrong, and nothing is stored.
 */
export async function createBatch(ctx: Context, caller: Caller, raw: Buffer, idemKey: string | null): Promise<CreatedBatch> {
  const { count, fingerprint } = scanBody(raw);
  if (count === 0) throw errors.invalidBody('The batch has no lines.', [{ path: '/lines', message: 'at least one line is required' }]);
  return ctx.sql.begin(async (tx) => {
    const [{ r: opened }] = await openBatch(tx, {
      accountId: caller.accountId, workspaceId: caller.workspaceId, keyId: caller.keyId, total: count,
      idemKey, fingerprint: idemKey ? fingerprint : null, idemTtlSeconds: ctx.config.idempotencyTtlSeconds,
    });
    // Lines are stored only into a batch opened here, and only while every line so far is valid.
    const storing = () => opened.outcome === 'opened' && details.length === 0 && missing.length === 0;
    const details: ErrorDetail[] = [];
    const missing: string[] = [];
    const seen = new Map<string, number>();
    const models = new ModelKeys();
    let chunk: ChunkLine[] = [];
    let stored = 0;
    const flush = async () => {
      if (storing() && chunk.length) {
        const requests = chunk.map((l) => {
          const { model, fallbacks, ...rest } = l.prepared.request;
          return { ...rest, model: models.key(model), ...(fallbacks ? { fallbacks: fallbacks.map((f) => models.key(f)) } : {}) };
        });
        await addBatchLines(tx, {
          batchId: opened.id!, accountId: caller.accountId, origin: caller.origin, maxAttempts: ctx.config.generationMaxAttempts,
          firstLine: stored + 1,
          customIds: chunk.map((l) => l.customId),
          types: chunk.map((l) => l.prepared.type),
          modelIds: chunk.map((l) => l.prepared.modelId),
          requests: JSON.stringify(requests),
          reserves: chunk.map((l) => String(l.prepared.reserveMicros)),
          models: models.take(),
        });
        stored += chunk.length;
      }
      chunk = [];
    };
    for (const { n, src } of physicalLines(raw)) {
      if (src.trim() === '') continue;
      const line = await validateLine(ctx, n, src, seen, details);
      if (!line) continue;
      // The key was made with requireEndUser: every line without an endUser, by its pointer.
      if (opened.require_end_user && line.prepared.request.endUser == null) missing.push(`/lines/${n}/body`);
      if (!storing()) continue;
      chunk.push(line);
      if (chunk.length >= CHUNK_LINES) await flush();
    }
    await flush();
    if (details.length) throw invalidBatch(details);
    if (missing.length) {
      const shown = missing.map((p) => endUserRequired(undefined, p).details![0]!);
      const first = shown.slice(0, 3).map((d) => d.path).join(', ');
      throw errors.invalidBody(`This API key requires an end user (requireEndUser): ${shown.length} line${shown.length === 1 ? ' lacks' : 's lack'} endUser (${first}${shown.length > 3 ? ', …' : ''}). Nothing was created.`, shown);
    }
    if (opened.outcome === 'conflict') throw new ApiError('idempotency_conflict', 'This Idempotency-Key was already used with a different batch; use a new key for a new batch.');
    if (opened.outcome === 'pending') throw new ApiError('conflict', 'A batch with this Idempotency-Key is still being created; retry.', { headers: { 'retry-after': '1' } });
    if (opened.outcome === 'replayed') return { batch: opened.batch!, replayed: true };
    const [{ r }] = await closeBatch(tx, opened.id!, caller.accountId);
    return { batch: r.batch, replayed: false };
  });
}
