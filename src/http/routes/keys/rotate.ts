// POST /keys/{id}/rotate — a new secret under the same id; the old one works until the grace ends.

import type { H3Event } from 'h3';
import type { Context } from '../../../context.ts';
import { readJson, sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { KeyWithSecret, RotateKeyRequest } from '../../../keys/schemas.ts';
import { rotateKeyFor } from '../../../keys/service.ts';
import { KeyIdParam, keyId } from './_params.ts';

/** The body is optional: none (or an empty one) means the default grace. */
async function optionalBody(ctx: Context, event: H3Event): Promise<unknown> {
  const len = event.req.headers.get('content-length');
  if ((len === null || len === '0') && !event.req.headers.has('transfer-encoding')) return {};
  return readJson(event, ctx.config.maxBodyBytes);
}

export default defineRoute<{ id: string; body: unknown }>({
  method: 'POST',
  path: '/keys/{id}/rotate',
  operationId: 'rotateKey',
  summary: 'Rotate an API key',
  description:
    'Answers a new secret under the same id (its scopes, limits, budget and history stay). The previous secret keeps working for `graceSeconds` ' +
    '(0 to 7 days; default a day), so clients can switch without downtime; then it gets the same 401 as an unknown key. ' +
    'The body is optional: none, or `{}`, means the default grace. ' +
    'Any older secret (still in the grace of an earlier rotation) ends at once: at most two secrets work, the new one and the one it replaced. ' +
    '403 `forbidden` when the key has a scope the caller lacks (nothing changes); 404 when the key is not the caller\'s scope\'s; 409 when it is revoked or expired.',
  tag: 'Keys',
  scope: 'keys',
  bucket: null,
  params: { id: KeyIdParam },
  body: RotateKeyRequest,
  bodyOptional: true,
  success: { status: 201, description: 'The key, with its new secret.', schema: KeyWithSecret, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 409, 413, 415, 429, 503],
  prepare: async (ctx, event) => ({ id: keyId(event), body: await optionalBody(ctx, event) }),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await rotateKeyFor(ctx, caller, payload!.id, payload!.body), { status: 201, headers: { 'cache-control': 'no-store' } });
  },
});
