// GET /keys — the keys of the caller's billing scope (never a secret or hash).

import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { KeyList } from '../../../keys/schemas.ts';
import { listKeysFor } from '../../../keys/service.ts';

export default defineRoute({
  method: 'GET',
  path: '/keys',
  operationId: 'listKeys',
  summary: 'List API keys',
  description:
    'The keys of the caller\'s billing scope, newest first, revoked and expired ones included. Personal: the caller\'s own personal keys. ' +
    'A workspace: all keys billed to it for its owners and admins, a member\'s own otherwise. Needs the `keys` scope (a console session has it). ' +
    'Keys with scopes the caller lacks are listed too (nothing in an entry is secret), though only a caller holding every scope of a key may read it alone, rotate or revoke it. ' +
    '`liveSecrets` and `graceEndsAt` say how many of a key\'s secrets work now and until when the older one does.',
  tag: 'Keys',
  scope: 'keys',
  bucket: 'read',
  success: { status: 200, description: 'The keys.', schema: KeyList, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [401, 403, 429, 503],
  async handler(ctx, event, { caller }) {
    return sendJson(event, await listKeysFor(ctx, caller), { headers: { 'cache-control': 'no-store' } });
  },
});
