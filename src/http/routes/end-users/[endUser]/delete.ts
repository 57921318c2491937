// DELETE /end-users/{endUser} — remove an end user's cap.

import { defineRoute } from '../../../route.ts';
import { EndUserParam, endUserParam, removeEndUserBudgetFor } from '../../../../endusers/budgets.ts';

export default defineRoute<string>({
  method: 'DELETE',
  path: '/end-users/{endUser}',
  operationId: 'removeEndUserBudget',
  summary: 'Remove an end user\'s budget',
  description:
    'Its requests are then bound only by the account\'s (or workspace\'s) and the key\'s budgets; reservations held on the cap still end on it. ' +
    'An audit entry (`end_user.budget_removed`). 404 when the end user has no cap in the caller\'s billing scope. Needs the `keys` scope.',
  tag: 'End users',
  scope: 'keys',
  bucket: null,
  params: { endUser: EndUserParam },
  success: { status: 204, description: 'Removed.', headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 429, 503],
  prepare: (_ctx, event) => endUserParam(event),
  async handler(ctx, event, { caller, payload }) {
    await removeEndUserBudgetFor(ctx, caller, payload!);
    event.res.status = 204;
    event.res.headers.set('cache-control', 'no-store');
    return '';
  },
});
