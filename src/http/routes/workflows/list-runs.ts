// GET /workflows/{id}/runs — a workflow's runs, newest first, paged by limit/offset.

import { getRouterParam } from 'h3';
import { errors } from '../../../errors.ts';
import { sendJson } from '../../json.ts';
import { defineRoute, queryParam } from '../../route.ts';
import { isUuid } from '../../../schemas.ts';
import { ListLimit, RunListOffset, WorkflowRunList } from '../../../workflows/schemas.ts';
import { listRunsCall, listRunsReplica, parsePage, type RunPage } from '../../../workflows/service.ts';
import type { WorkflowRunSummaryRow } from '../../../db/sql/list_workflow_runs.ts';
import { WorkflowIdParam } from './_params.ts';

export default defineRoute<RunPage, { body: WorkflowRunSummaryRow[] | null }>({
  method: 'GET',
  path: '/workflows/{id}/runs',
  operationId: 'listWorkflowRuns',
  summary: 'List a workflow\'s runs',
  description: 'The runs of one of the caller\'s workflows, newest first, without their results (read one with `GET /workflows/{id}/runs/{runId}`). 404 when the workflow does not exist or belongs to another account.',
  tag: 'Workflows',
  scope: 'read',
  bucket: 'read',
  params: { id: WorkflowIdParam },
  query: { limit: ListLimit, offset: RunListOffset },
  success: { status: 200, description: 'A page of runs.', schema: WorkflowRunList, headers: { 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 429, 503],
  // Authorization, rate limit and the read in one round trip.
  call: listRunsCall,
  replicaRead: listRunsReplica,
  prepare(_ctx, event) {
    const id = getRouterParam(event, 'id');
    if (!isUuid(id)) throw errors.invalid('id: must be a uuid');
    return { workflowId: id.toLowerCase(), ...parsePage({ limit: queryParam(event, 'limit'), offset: queryParam(event, 'offset') }) };
  },
  async handler(_ctx, event, { row }) {
    if (!row?.body) throw errors.notFound('Workflow');
    return sendJson(event, { data: row.body }, { headers: { 'cache-control': 'no-store' } });
  },
});
