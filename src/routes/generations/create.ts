// POST /generations — authorize the key (scope, its own rpm), validate and price the request,
// then reserve the worst-case cost, insert and enqueue in one transaction. Replies 202 at once.

import { authorize, readJson, sendJson } from '../../http.ts';
import { defineRoute } from '../../route.ts';
import { GenerationAccepted, GenerationRequest } from '../../generations/schemas.ts';
import { createGeneration } from '../../generations/service.ts';

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
    // key's own rpm still applies.
    const auth = await authorize(ctx, event, { scope: 'write', bucket: null });
    const input = await readJson(event, ctx.config.maxBodyBytes);
    const accepted = await createGeneration(ctx, { accountId: auth.accountId, keyId: auth.keyId, workspaceId: auth.workspaceId, origin: 'api' }, input);
    return sendJson(event, accepted, {
      status: 202,
      headers: { 'cache-control': 'no-store', location: `${ctx.config.publicUrl}/api/v1/generations/${accepted.id}` },
    });
  },
});
