// POST /admin/accounts/{id}/revoke-keys — revoke every live API key of an account at once.

import { RevokeKeysResult } from '../../../admin/schemas.ts';
import { revokeAccountKeys } from '../../../admin/service.ts';
import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { AccountIdParam, accountId } from './_params.ts';

export default defineRoute<string>({
  method: 'POST',
  path: '/admin/accounts/{id}/revoke-keys',
  operationId: 'adminRevokeAccountKeys',
  summary: 'Revoke all of an account\'s keys',
  description:
    'Every secret of every live API key of the account (a rotation\'s previous one too) gets 401 from the next request on. ' +
    'One `key.revoked` audit entry per key, naming the admin. Console sessions are not keys and stay. Idempotent: a second call revokes 0.',
  tag: 'admin',
  scope: 'admin',
  bucket: null,
  params: { id: AccountIdParam },
  success: { status: 200, description: 'How many keys were revoked, and the account.', schema: RevokeKeysResult, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 429, 503],
  prepare: (_ctx, event) => accountId(event),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await revokeAccountKeys(ctx, caller, payload!), { headers: { 'cache-control': 'no-store' } });
  },
});
