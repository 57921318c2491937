// POST /generations — authorize the key (scope, its own rpm), validate and price the request,
// then reserve the worst-case cost, insert and enqueue in one transaction. Replies 202 at once.
// With an Idempotency-Key, the key is claimed in that same transaction (http/idempotency.ts).

import type { H3Event } from 'h3';
import { ALONE } from '../../../auth/access.ts';
import type { Context } from '../../../context.ts';
import { IDEMPOTENCY_HEADER, IdempotencyKeySchema, idempotencyOf, readIdempotencyKey, REPLAYED_HEADER } from '../../idempotency.ts';
import { readJson, sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { GenerationAccepted, GenerationRequest } from '../../../generations/schemas.ts';
import { acceptStarted, prepareGeneration, startGeneration, startGenerationCall, type PreparedGeneration, type StartColumns } from '../../../generations/service.ts';

/** Bodies up to this size are read before the key is checked, so both go out in one call. */
const ONE_CALL_MAX_BODY_BYTES = 64 * 1024;

/** The body as read by `prepare`, for the handler (a stale catalog price is priced again from it). */
const inputs = new WeakMap<H3Event, unknown>();

export default defineRoute<PreparedGeneration, StartColumns>({
  method: 'POST',
  path: '/generations',
  operationId: 'createGeneration',
  summary: 'Start an image or code generation',
  description:
    'Only enqueues: replies 202 with a pending id at once; poll `GET /generations/{id}` for the result. ' +
    'The worst-case cost is reserved from the key\'s budget (personal or Team pool) and settled at the actual cost when the job completes; a failed job costs nothing. ' +
    'With an `Idempotency-Key`, a retry of an accepted request (same key, same body, any key of the account) answers the same id with `idempotent-replayed: true` and starts nothing; ' +
    'concurrent duplicates start one job.',
  tag: 'Generations',
  // No endpoint bucket: starts are bounded by the budget and the plan's parallel slots; a key's
  // own rpm still applies.
  scope: 'write',
  bucket: null,
  headers: { [IDEMPOTENCY_HEADER]: IdempotencyKeySchema },
  body: GenerationRequest,
  success: {
    status: 202,
    description: 'Accepted; the job is pending (or, replayed, was accepted earlier with this Idempotency-Key).',
    schema: GenerationAccepted,
    headers: { [REPLAYED_HEADER]: '`true` when this is the stored answer of an earlier request with the same Idempotency-Key and body.' },
  },
  errors: [400, 401, 402, 403, 422, 429, 500, 503],
  // Key, limits, reservation, insert and enqueue in one transaction (DESIGN.md Execution).
  call: startGenerationCall,
  async prepare(ctx: Context, event: H3Event) {
    // A large or unsized body (image inputs, typically) is read only for an authorized key: two
    // round trips, the key first.
    const declared = Number(event.req.headers.get('content-length') ?? NaN);
    if (!(declared <= ONE_CALL_MAX_BODY_BYTES)) return ALONE;
    const key = readIdempotencyKey(event);
    const input = await readJson(event, ctx.config.maxBodyBytes);
    inputs.set(event, input);
    // Image inputs are decoded and sniffed only for an authorized key.
    if (hasImages(input)) return ALONE;
    const prepared = await prepareGeneration(ctx, input);
    if (key !== null) prepared.idempotency = idempotencyOf(key, input);
    return prepared;
  },
  async handler(ctx, event, { caller, row, payload }) {
    let started;
    if (row && payload) {
      started = await acceptStarted(ctx, caller, row, payload, inputs.get(event));
    } else {
      const key = readIdempotencyKey(event);
      const input = inputs.has(event) ? inputs.get(event) : await readJson(event, ctx.config.maxBodyBytes);
      started = await startGeneration(ctx, caller, input, idempotencyOf(key, input));
    }
    const headers: Record<string, string> = { 'cache-control': 'no-store', location: `${ctx.config.publicUrl}/api/v1/generations/${started.body.id}` };
    if (started.replayed) headers[REPLAYED_HEADER] = 'true';
    return sendJson(event, started.body, { status: 202, headers });
  },
});

function hasImages(input: unknown): boolean {
  const images = (input as { images?: unknown } | null)?.images;
  return Array.isArray(images) && images.length > 0;
}
