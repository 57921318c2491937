// PATCH /admin/accounts/{id} — set an account's tier and/or budget (audited).

import { AdminAccountDetail, UpdateAccountRequest } from '../../../admin/schemas.ts';
import { updateAccount } from '../../../admin/service.ts';
import { readJson, sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { AccountIdParam, accountId } from './_params.ts';

export default defineRoute<{ id: string; body: unknown }>({
  method: 'PATCH',
  path: '/admin/accounts/{id}',
  operationId: 'adminUpdateAccount',
  summary: 'Set an account\'s tier or budget',
  description:
    'Fields left out stay as they are; `budgetMicros: null` means unlimited. `tier: blocked` stops the account\'s new generations. ' +
    'Written to the account\'s audit log as `account.updated` (each change from → to), naming the admin\'s key or session.',
  tag: 'admin',
  scope: 'admin',
  bucket: null,
  params: { id: AccountIdParam },
  body: UpdateAccountRequest,
  success: { status: 200, description: 'The account as updated.', schema: AdminAccountDetail, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 413, 415, 429, 503],
  prepare: async (ctx, event) => ({ id: accountId(event), body: await readJson(event, ctx.config.maxBodyBytes) }),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await updateAccount(ctx, caller, payload!.id, payload!.body), { headers: { 'cache-control': 'no-store' } });
  },
});
