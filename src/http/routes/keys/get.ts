// GET /keys/{id} — one key of the caller's billing scope (never a secret or hash).

import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { Key } from '../../../keys/schemas.ts';
import { getKeyFor } from '../../../keys/service.ts';
import { KeyIdParam, keyId } from './_params.ts';

export default defineRoute<string>({
  method: 'GET',
  path: '/keys/{id}',
  operationId: 'getKey',
  summary: 'Get an API key',
  description:
    'One key, as `GET /keys` lists it, with `liveSecrets` and `graceEndsAt` to follow a rotation. ' +
    'Like rotating and revoking, it needs the caller to hold every scope of the key: a stronger key is 403 `forbidden`. ' +
    '404 when it is not the caller\'s scope\'s.',
  tag: 'Keys',
  scope: 'keys',
  bucket: 'read',
  params: { id: KeyIdParam },
  success: { status: 200, description: 'The key.', schema: Key },
  errors: [400, 401, 403, 404, 429, 503],
  prepare: (_ctx, event) => keyId(event),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await getKeyFor(ctx, caller, payload!), { headers: { 'cache-control': 'no-store' } });
  },
});
