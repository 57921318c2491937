// GET /admin/workspaces/{id} — a workspace and its members.

import { AdminWorkspaceDetail } from '../../../admin/schemas.ts';
import { getWorkspace } from '../../../admin/service.ts';
import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { WorkspaceIdParam, workspaceId } from './_params.ts';

export default defineRoute<string>({
  method: 'GET',
  path: '/admin/workspaces/{id}',
  operationId: 'adminGetWorkspace',
  summary: 'Get a workspace',
  description: 'The workspace, its plan and spend, and its members (owner, admins, members; former members with `leftAt`).',
  tag: 'admin',
  scope: 'admin',
  bucket: 'read',
  params: { id: WorkspaceIdParam },
  success: { status: 200, description: 'The workspace.', schema: AdminWorkspaceDetail, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 429, 503],
  prepare: (_ctx, event) => workspaceId(event),
  async handler(ctx, event, { payload }) {
    return sendJson(event, await getWorkspace(ctx, payload!), { headers: { 'cache-control': 'no-store' } });
  },
});
