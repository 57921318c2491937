// PUT /end-users/{endUser} — set an end user's cap (budget per UTC day or calendar month, rpm).

import { readJson, sendJson } from '../../../json.ts';
import { defineRoute } from '../../../route.ts';
import {
  EndUserBudget, EndUserParam, endUserParam, parseBudgetInput, SetEndUserBudgetRequest, setEndUserBudgetFor, type EndUserBudgetInput,
} from '../../../../endusers/budgets.ts';

export default defineRoute<{ endUser: string; input: EndUserBudgetInput }>({
  method: 'PUT',
  path: '/end-users/{endUser}',
  operationId: 'setEndUserBudget',
  summary: 'Set an end user\'s budget',
  description:
    'Caps what requests naming this `endUser` may reserve per period, in the caller\'s billing scope, on top of the account\'s (or workspace\'s) and the key\'s own budgets: the tightest wins. ' +
    'Over it, a request gets 429 `insufficient_quota` naming the end user; with `rpm`, its quick requests past the limit get 429 `rate_limited` with `Retry-After`. ' +
    'A new cap (or a new period) counts what the end user already spent in the period. Every change is an audit entry (`end_user.budget_set`). ' +
    'Needs the `keys` scope.',
  tag: 'End users',
  scope: 'keys',
  bucket: null,
  params: { endUser: EndUserParam },
  body: SetEndUserBudgetRequest,
  success: { status: 200, description: 'The end user\'s cap and use, as `GET` shows them.', schema: EndUserBudget, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 413, 415, 429, 503],
  prepare: async (ctx, event) => ({ endUser: endUserParam(event), input: parseBudgetInput(await readJson(event, ctx.config.maxBodyBytes)) }),
  async handler(ctx, event, { caller, payload }) {
    return sendJson(event, await setEndUserBudgetFor(ctx, caller, payload!.endUser, payload!.input), { headers: { 'cache-control': 'no-store' } });
  },
});
