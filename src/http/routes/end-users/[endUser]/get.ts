// GET /end-users/{endUser} — an end user's cap and this period's use in the caller's billing scope.

import { sendJson } from '../../../json.ts';
import { defineRoute } from '../../../route.ts';
import { EndUserBudget, EndUserParam, endUserParam, getEndUserBudgetFor } from '../../../../endusers/budgets.ts';

export default defineRoute<string>({
  method: 'GET',
  path: '/end-users/{endUser}',
  operationId: 'getEndUserBudget',
  summary: 'Get an end user\'s budget and use',
  description:
    'The cap set with `PUT /end-users/{endUser}` and what the end user used this period (settled plus held) and has left. ' +
    'An end user without a cap answers the same shape with `budgetMicros: null` and its use this calendar month (UTC): never 404. ' +
    'The billing scope is the caller\'s (a workspace-bound key reads the workspace\'s end users); another scope\'s end user of the same id is another end user.',
  tag: 'End users',
  scope: 'read',
  bucket: 'read',
  params: { endUser: EndUserParam },
  success: { status: 200, description: 'The end user\'s cap and use.', schema: EndUserBudget, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 429, 503],
  prepare: (_ctx, event) => endUserParam(event),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await getEndUserBudgetFor(ctx, caller, payload!), { headers: { 'cache-control': 'no-store' } });
  },
});
