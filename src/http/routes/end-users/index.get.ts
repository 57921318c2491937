// GET /end-users — the end users of the key's billing scope by spend over a range of UTC days, in
// keyset pages (docs/usage.md, "Usage by end user and by metadata").

import { sendJson } from '../../json.ts';
import { defineRoute, queryParam } from '../../route.ts';
import type { EndUserPageJson } from '../../../db/sql/list_end_users.ts';
import { endUsersCall, endUsersReplica, EndUserList, EndUsersQuery, parseEndUsersQuery, renderEndUsers, type EndUsersQueryArgs } from '../../../endusers/usage.ts';
import { errors } from '../../../errors.ts';

export default defineRoute<EndUsersQueryArgs, { body: EndUserPageJson | null }>({
  method: 'GET',
  path: '/end-users',
  operationId: 'listEndUsers',
  summary: 'List end users by spend',
  description:
    'The end users (the `endUser` of requests that spent) of the key\'s billing scope — the personal budget, or the Team pool of a workspace-bound key — ' +
    'with their spend and charges over `from`..`to` (UTC days; default the current calendar month), by `usedMicros` descending then `endUser`. ' +
    'Pages follow `nextCursor` (keyset). A whole calendar month reads a monthly roll-up in spend order; another range sums its days.',
  tag: 'Usage',
  scope: 'read',
  bucket: 'read',
  query: EndUsersQuery,
  success: { status: 200, description: 'A page of end users.', schema: EndUserList, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 429, 503],
  call: endUsersCall,
  replicaRead: endUsersReplica,
  prepare: (ctx, event) => parseEndUsersQuery(ctx, Object.fromEntries(
    (['from', 'to', 'limit', 'cursor'] as const).map((n) => [n, queryParam(event, n)]),
  )),
  async handler(ctx, event, { row, payload }) {
    if (!row?.body) throw errors.notFound('Account');
    return sendJson(event, await renderEndUsers(ctx, row.body, payload!), { headers: { 'cache-control': 'no-store' } });
  },
});
