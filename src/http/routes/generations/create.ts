// POST /generations — authorize the key (scope, its own rpm), validate and price the request,
// then reserve the worst-case cost, insert and enqueue in one transaction. Replies 202 at once —
// or, with `Prefer: wait=N`, 200 with the generation's status when it settles within N seconds.

import type { H3Event } from 'h3';
import { ALONE } from '../../../auth/access.ts';
import type { Context } from '../../../context.ts';
import { readJson, sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { GenerationAccepted, GenerationRequest, GenerationStatus } from '../../../generations/schemas.ts';
import { acceptStarted, createGeneration, prepareGeneration, renderGeneration, startGenerationCall, type PreparedGeneration, type StartColumns } from '../../../generations/service.ts';
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
    'With `Prefer: wait=N` (1–60), waits up to N seconds: a job completed or failed by then is answered 200 with its status (as `GET /generations/{id}`), otherwise the usual 202.',
  tag: 'Generations',
  // No endpoint bucket: starts are bounded by the budget and the plan's parallel slots; a key's
  // own rpm still applies.
  scope: 'write',
  bucket: null,
  headers: { Prefer: PreferWait },
  body: GenerationRequest,
  success: {
    status: 202, description: 'Accepted; the job is pending (with `Prefer: wait`, it did not settle in time).', schema: GenerationAccepted,
    headers: { location: 'The generation\'s URL.', 'preference-applied': PREFERENCE_APPLIED },
  },
  also: [{
    status: 200, description: 'With `Prefer: wait=N`: the job completed or failed within N seconds; its status.', schema: GenerationStatus,
    headers: { location: 'The generation\'s URL.', 'preference-applied': PREFERENCE_APPLIED },
  }],
  errors: [400, 401, 402, 403, 429, 500, 503],
  // Key, limits, reservation, insert and enqueue in one transaction (DESIGN.md Execution).
  call: startGenerationCall,
  async prepare(ctx: Context, event: H3Event) {
    const seconds = preferredWait(event.req.headers.get('prefer'));
    if (seconds) waits.set(event, { seconds, mark: hubOf(ctx).mark() });
    // A large or unsized body (image inputs, typically) is read only for an authorized key: two
    // round trips, the key first.
    const declared = Number(event.req.headers.get('content-length') ?? NaN);
    if (!(declared <= ONE_CALL_MAX_BODY_BYTES)) return ALONE;
    const input = await readJson(event, ctx.config.maxBodyBytes);
    inputs.set(event, input);
    // Image inputs are decoded and sniffed only for an authorized key.
    if (hasImages(input)) return ALONE;
    return prepareGeneration(ctx, input);
  },
  async handler(ctx, event, { caller, row, payload }) {
    let accepted;
    if (row && payload) {
      accepted = await acceptStarted(ctx, caller, row, payload, inputs.get(event));
    } else {
      const input = inputs.has(event) ? inputs.get(event) : await readJson(event, ctx.config.maxBodyBytes);
      accepted = await createGeneration(ctx, caller, input);
    }
    const headers: Record<string, string> = { 'cache-control': 'no-store', location: `${ctx.config.publicUrl}/api/v1/generations/${accepted.id}` };
    const wait = waits.get(event);
    if (wait) {
      headers['preference-applied'] = `wait=${wait.seconds}`;
      const type = (payload ?? (inputs.get(event) as { type?: string } | undefined))?.type === 'image' ? 'image' : 'code';
      const { state, done } = await waitForGeneration(ctx, caller, accepted.id, {
        mark: wait.mark, first: pendingRow(accepted.id, type), seconds: wait.seconds, signal: event.req.signal,
      });
      if (done && state) return sendJson(event, await renderGeneration(ctx, state), { status: 200, headers });
    }
    return sendJson(event, accepted, { status: 202, headers });
  },
});

function hasImages(input: unknown): boolean {
  const images = (input as { images?: unknown } | null)?.images;
  return Array.isArray(images) && images.length > 0;
}
