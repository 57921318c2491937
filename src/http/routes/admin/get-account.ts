// GET /admin/accounts/{id} — an account's page: tier, budget, spend, its keys and workspaces.

import { AdminAccountDetail } from '../../../admin/schemas.ts';
import { getAccount } from '../../../admin/service.ts';
import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { AccountIdParam, accountId } from './_params.ts';

export default defineRoute<string>({
  method: 'GET',
  path: '/admin/accounts/{id}',
  operationId: 'adminGetAccount',
  summary: 'Get an account',
  description: 'The account\'s tier, budget, spend this period and when it resets, its API keys (revoked ones too; never a secret or hash) and its workspaces.',
  tag: 'admin',
  scope: 'admin',
  bucket: 'read',
  params: { id: AccountIdParam },
  success: { status: 200, description: 'The account.', schema: AdminAccountDetail, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 429, 503],
  prepare: (_ctx, event) => accountId(event),
  async handler(ctx, event, { payload }) {
    return sendJson(event, await getAccount(ctx, payload!), { headers: { 'cache-control': 'no-store' } });
  },
});
