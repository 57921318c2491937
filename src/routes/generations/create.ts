// POST /generations — authorize the key (scope, its own rpm), validate and price the request,
// then reserve the worst-case cost, insert and enqueue in one transaction. Replies 202 at once.

import { authorizeHash, readJson, requireBearer, sendJson, type KeyAuth } from '../../http.ts';
import { hashKey } from '../../keys.ts';
import { defineRoute } from '../../route.ts';
import { GenerationAccepted, GenerationRequest } from '../../generations/schemas.ts';
import { createGeneration, startGeneration, type Caller } from '../../generations/service.ts';

export default defineRoute({
  method: 'POST',
  path: '/generations',
  operationId: 'createGeneration',
  summary: 'Start an image or code generation',
  description:
    'Only enqueues: replies 202 with a pending id at once; poll `GET /generations/{id}` for the result. ' +
    'The worst-case cost is reserved from the key\'s budget (personal or Team pool) and settled at the actual cost when the job completes; a failed job costs nothing.',
  tag: 'Generations',
  scope: 'write',
  body: GenerationRequest,
  success: { status: 202, description: 'Accepted; the job is pending.', schema: GenerationAccepted },
  errors: [400, 401, 402, 403, 429, 500, 503],
  async handler(ctx, event) {
    // No endpoint bucket: starts are bounded by the budget and the plan's parallel slots; a
    // key's own rpm still applies. The key's 401/403 come before any body error.
    const hash = hashKey(requireBearer(event));
    const write = { scope: 'write', bucket: null } as const;
    const declared = Number(event.req.headers.get('content-length') ?? NaN);
    let accepted;
    if (!(declared <= ONE_CALL_MAX_BODY_BYTES)) {
      // A large or unsized body (image inputs, typically) is read only for an authorized key:
      // two round trips, the key first.
      const auth = await authorizeHash(ctx, hash, write);
      const input = await readJson(event, ctx.config.maxBodyBytes);
      accepted = await createGeneration(ctx, callerOf(auth), input);
    } else {
      let input: unknown;
      try {
        input = await readJson(event, ctx.config.maxBodyBytes);
      } catch (e) {
        await authorizeHash(ctx, hash, write);
        throw e;
      }
      if (hasImages(input)) {
        // Image inputs are decoded and sniffed only for an authorized key.
        accepted = await createGeneration(ctx, callerOf(await authorizeHash(ctx, hash, write)), input);
      } else {
        // Key, limits, reservation, insert and enqueue in one transaction (DESIGN.md Execution).
        accepted = await startGeneration(ctx, hash, input);
      }
    }
    return sendJson(event, accepted, {
      status: 202,
      headers: { 'cache-control': 'no-store', location: `${ctx.config.publicUrl}/api/v1/generations/${accepted.id}` },
    });
  },
});

/** Bodies up to this size are read before the key is checked, so both go out in one call. */
const ONE_CALL_MAX_BODY_BYTES = 64 * 1024;

function callerOf(auth: KeyAuth): Caller {
  return { accountId: auth.accountId, keyId: auth.keyId, workspaceId: auth.workspaceId, origin: 'api' };
}

function hasImages(input: unknown): boolean {
  const images = (input as { images?: unknown } | null)?.images;
  return Array.isArray(images) && images.length > 0;
}
