// DELETE /keys/{id} — revoke every secret of a key at once.

import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { Key } from '../../../keys/schemas.ts';
import { revokeKeyFor } from '../../../keys/service.ts';
import { KeyIdParam, keyId } from './_params.ts';

export default defineRoute<string>({
  method: 'DELETE',
  path: '/keys/{id}',
  operationId: 'revokeKey',
  summary: 'Revoke an API key',
  description: 'Every secret of the key (a rotation\'s previous one too) gets 401 from the next request on. Idempotent: answers the key with `revokedAt`. 403 `forbidden` when the key has a scope the caller lacks (nothing changes); 404 when it is not the caller\'s scope\'s.',
  tag: 'Keys',
  scope: 'keys',
  bucket: null,
  params: { id: KeyIdParam },
  success: { status: 200, description: 'The revoked key.', schema: Key, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 429, 503],
  prepare: (_ctx, event) => keyId(event),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await revokeKeyFor(ctx, caller, payload!), { headers: { 'cache-control': 'no-store' } });
  },
});
