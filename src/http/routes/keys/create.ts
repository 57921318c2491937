// POST /keys — a new key in the caller's billing scope; the answer holds its secret, shown once.

import { readJson, sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { CreateKeyRequest, KeyWithSecret } from '../../../keys/schemas.ts';
import { createKeyFor } from '../../../keys/service.ts';

export default defineRoute<unknown>({
  method: 'POST',
  path: '/keys',
  operationId: 'createKey',
  summary: 'Create an API key',
  description:
    'The key bills the caller\'s scope (a workspace only for its owners and admins). Its `scopes` can never exceed the caller\'s own (403 `insufficient_scope`). ' +
    '`budgetMicros` caps what it may spend per billing period, below the pool\'s: past it, 429 `insufficient_quota`. ' +
    'The answer is the key\'s list entry plus `key`, the secret: store it, it is not shown again.',
  tag: 'Keys',
  scope: 'keys',
  bucket: null,
  body: CreateKeyRequest,
  success: { status: 201, description: 'The key, with its secret.', schema: KeyWithSecret, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 413, 415, 429, 503],
  prepare: (ctx, event) => readJson(event, ctx.config.maxBodyBytes),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await createKeyFor(ctx, caller, payload), { status: 201, headers: { 'cache-control': 'no-store' } });
  },
});
