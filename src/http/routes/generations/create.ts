// POST /generations — authorize the key (scope, its own rpm), validate and price the request,
// then reserve the worst-case cost, insert and enqueue in one transaction. Replies 202 at once —
// or, with `Prefer: wait=N`, 200 with the generation's status when it settles within N seconds.
// With an Idempotency-Key, the key is claimed in that same transaction (http/idempotency-header.ts).

import type { H3Event } from 'h3';
import { ALONE } from '../../../auth/access.ts';
import type { Context } from '../../../context.ts';
import { IDEMPOTENCY_HEADER, IdempotencyKeySchema, idempotencyOf, REPLAYED_HEADER } from '../../../idempotency.ts';
import { readIdempotencyKey } from '../../idempotency-header.ts';
import { readJson, sendJson } from '../../json.ts';
import { apiUrl, defineRoute } from '../../route.ts';
import { GenerationAccepted, GenerationRequest, GenerationStatus } from '../../../generations/schemas.ts';
import { acceptStarted, startGeneration, startGenerationCall, type StartColumns } from '../../../generations/create.ts';
import { prepareGeneration, type PreparedGeneration } from '../../../generations/prepare.ts';
import { renderGeneration } from '../../../generations/service.ts';
import { pendingRow, waitForGeneration } from '../../../live/generations.ts';
import { hubOf } from '../../../live/hub.ts';
import { PREFERENCE_APPLIED, PreferWait } from '../../../live/schemas.ts';
import { preferredWait } from '../../../live/wait.ts';

/** Bodies up to this size are read before the key is checked, so both go out in one call. */
const ONE_CALL_MAX_BODY_BYTES = 64 * 1024;

/** The body as read by `prepare`, for the handler (a stale catalog price is priced again from it). */
const inputs = new WeakMap<H3Event, unknown>();
/** The honoured wait of a request and the hub mark taken before the generation was created. */
const waits = new WeakMap<H3Event, { seconds: number; mark: number }>();

export default defineRoute<PreparedGeneration, StartColumns>({
  method: 'POST',
  path: '/generations',
  operationId: 'createGeneration',
  summary: 'Start an image or code generation',
  description:
    'Only enqueues: replies 202 with a pending id at once; poll `GET /generations/{id}` for the result. ' +
    'The worst-case cost is reserved from the key\'s budget (personal or Team pool) and settled at the actual cost when the job completes; a failed job costs nothing. ' +
    'With `Prefer: wait=N` (1–60), waits up to N seconds: a job completed or failed by then is answered 200 with its status (as `GET /generations/{id}`), otherwise the usual 202. ' +
    'With an `Idempotency-Key`, a retry of an accepted request (same key, same body, any key of the account) answers the same id with `idempotent-replayed: true` and starts nothing; ' +
    'concurrent duplicates start one job.',
  tag: 'Generations',
  // No endpoint bucket: starts are bounded by the budget and the plan's parallel slots; a key's
  // own rpm still applies.
  scope: 'write',
  bucket: null,
  headers: { Prefer: PreferWait, [IDEMPOTENCY_HEADER]: IdempotencyKeySchema },
  body: GenerationRequest,
  success: {
    status: 202,
    description: 'Accepted; the job is pending (with `Prefer: wait`, it did not settle in time; replayed, it was accepted earlier with this Idempotency-Key).',
    schema: GenerationAccepted,
    headers: {
      location: 'The generation\'s URL.',
      'cache-control': 'Always `no-store`.',
      'preference-applied': PREFERENCE_APPLIED,
      [REPLAYED_HEADER]: '`true` when this is the stored answer of an earlier request with the same Idempotency-Key and body.',
    },
  },
  also: [{
    status: 200, description: 'With `Prefer: wait=N`: the job completed or failed within N seconds; its status.', schema: GenerationStatus,
    headers: {
      location: 'The generation\'s URL.',
      'cache-control': 'Always `no-store`.',
      'preference-applied': PREFERENCE_APPLIED,
      [REPLAYED_HEADER]: '`true` when the job was accepted earlier with this Idempotency-Key and body.',
    },
  }],
  errors: [400, 401, 402, 403, 413, 415, 422, 429, 500, 503],
  // Key, limits, reservation, insert and enqueue in one transaction (docs/api.md, "How billing and limits behave").
  call: startGenerationCall,
  async prepare(ctx: Context, event: H3Event) {
    const seconds = preferredWait(event.req.headers.get('prefer'));
    if (seconds) waits.set(event, { seconds, mark: hubOf(ctx).mark() });
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
    const headers: Record<string, string> = { 'cache-control': 'no-store', location: apiUrl(ctx, `/generations/${started.body.id}`) };
    if (started.replayed) headers[REPLAYED_HEADER] = 'true';
    const wait = waits.get(event);
    if (wait) {
      headers['preference-applied'] = `wait=${wait.seconds}`;
      const type = (payload ?? (inputs.get(event) as { type?: string } | undefined))?.type === 'image' ? 'image' : 'code';
      const { state, done } = await waitForGeneration(ctx, caller, started.body.id, {
        mark: wait.mark, first: pendingRow(started.body.id, type), seconds: wait.seconds, signal: event.req.signal,
      });
      if (done && state) return sendJson(event, await renderGeneration(ctx, state), { status: 200, headers });
    }
    return sendJson(event, started.body, { status: 202, headers });
  },
});

function hasImages(input: unknown): boolean {
  const images = (input as { images?: unknown } | null)?.images;
  return Array.isArray(images) && images.length > 0;
}
