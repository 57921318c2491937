// GET /admin/workspaces — every workspace, with its plan, spend and member count.

import * as v from 'valibot';
import { AdminWorkspacePage } from '../../../admin/schemas.ts';
import { listWorkspaces, type PageQuery } from '../../../admin/service.ts';
import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { pageQuery, readPageQuery } from './_params.ts';

export default defineRoute<PageQuery>({
  method: 'GET',
  path: '/admin/workspaces',
  operationId: 'adminListWorkspaces',
  summary: 'List workspaces',
  description: 'Every workspace with its owner, Team plan, spend this period and current member count, in pages by id. `q` keeps those whose name contains it.',
  tag: 'admin',
  scope: 'admin',
  bucket: 'read',
  query: { ...pageQuery, q: v.pipe(v.string(), v.description('Part of the name, 3 to 100 characters.')) },
  success: { status: 200, description: 'A page of workspaces.', schema: AdminWorkspacePage, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 429, 503],
  prepare: (_ctx, event) => readPageQuery(event),
  async handler(ctx, event, { payload }) {
    return sendJson(event, await listWorkspaces(ctx, payload!), { headers: { 'cache-control': 'no-store' } });
  },
});
