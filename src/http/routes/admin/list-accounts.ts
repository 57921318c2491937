// GET /admin/accounts — every account, sorted by spend this period, searchable by email.

import * as v from 'valibot';
import { AdminAccountPage } from '../../../admin/schemas.ts';
import { listAccounts, type PageQuery } from '../../../admin/service.ts';
import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { pageQuery, readPageQuery } from './_params.ts';

export default defineRoute<PageQuery>({
  method: 'GET',
  path: '/admin/accounts',
  operationId: 'adminListAccounts',
  summary: 'List accounts by spend',
  description:
    'Every account, most spent this period first (held + settled, as GET /usage counts it; then by id), in pages (`cursor` = the previous page\'s `nextCursor`). ' +
    '`q` keeps the accounts whose email contains it (case-insensitive, 3 to 100 characters). A page costs what it returns, not the size of the ledger.',
  tag: 'admin',
  scope: 'admin',
  bucket: 'read',
  query: { ...pageQuery, q: v.pipe(v.string(), v.description('Part of the email, 3 to 100 characters.')) },
  success: { status: 200, description: 'A page of accounts.', schema: AdminAccountPage, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 429, 503],
  prepare: (_ctx, event) => readPageQuery(event),
  async handler(ctx, event, { payload }) {
    return sendJson(event, await listAccounts(ctx, payload!), { headers: { 'cache-control': 'no-store' } });
  },
});
