// GET /workflows — the saved workflows of the key's billing scope, most recently updated first,
// paged by limit/offset.

import { sendJson } from '../../json.ts';
import { defineRoute, queryParam } from '../../route.ts';
import type { WorkflowSummaryBody } from '../../../workflows/schemas.ts';
import { ListLimit, ListOffset, WorkflowList } from '../../../workflows/schemas.ts';
import { listWorkflowsCall, listWorkflowsReplica, parsePage, type Page } from '../../../workflows/service.ts';

export default defineRoute<Page, { body: WorkflowSummaryBody[] | null }>({
  method: 'GET',
  path: '/workflows',
  operationId: 'listWorkflows',
  summary: 'List saved workflows',
  description: 'The workflows of the key\'s billing scope (its workspace for a workspace-bound key, else its account), most recently updated first; deleted ones are left out. The graph is not returned: `GET /workflows/{id}`.',
  tag: 'Workflows',
  scope: 'read',
  bucket: 'read',
  query: { limit: ListLimit, offset: ListOffset },
  success: { status: 200, description: 'A page of workflow summaries.', schema: WorkflowList, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 429, 500, 503],
  // Authorization, rate limit and the read in one round trip; a bad query still answers 401/403/429 first.
  call: listWorkflowsCall,
  replicaRead: listWorkflowsReplica,
  prepare: (_ctx, event) => parsePage({ limit: queryParam(event, 'limit'), offset: queryParam(event, 'offset') }),
  async handler(_ctx, event, { row }) {
    return sendJson(event, { data: row!.body ?? [] }, { headers: { 'cache-control': 'no-store' } });
  },
});
