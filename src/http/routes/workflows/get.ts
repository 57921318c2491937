// GET /workflows/{id} — one workflow of the key's billing scope with its graph (and the outputs
// completed runs wrote back onto it), version and ETag. Authorized and read in one SQL call.

import { getRouterParam } from 'h3';
import { errors } from '../../../errors.ts';
import { sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import type { WorkflowRow } from '../../../db/sql/get_workflow.ts';
import { etagOf, getWorkflowCall, workflowBody, workflowId } from '../../../workflows/authoring.ts';
import { Workflow } from '../../../workflows/schemas.ts';
import { WorkflowIdParam } from './_params.ts';

export default defineRoute<string, { body: WorkflowRow | null }>({
  method: 'GET',
  path: '/workflows/{id}',
  operationId: 'getWorkflow',
  summary: 'Get a workflow with its graph',
  description:
    'The graph includes the outputs written back by completed runs (`result` on output nodes). `version` and the `ETag` change with every save, ' +
    'not when a run writes its results back: an `If-Match` taken from here stays valid while only runs complete. Never cached (`no-store`). ' +
    '404 when it does not exist, was deleted, or belongs to another account or workspace.',
  tag: 'Workflows',
  scope: 'read',
  bucket: 'read',
  params: { id: WorkflowIdParam },
  success: { status: 200, description: 'The workflow.', schema: Workflow, headers: { etag: 'The version, quoted (`"3"`).', 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 429, 503],
  call: getWorkflowCall,
  prepare: (_ctx, event) => workflowId(getRouterParam(event, 'id')),
  async handler(_ctx, event, { row }) {
    if (!row?.body) throw errors.notFound('Workflow');
    const body = workflowBody(row.body);
    return sendJson(event, body, { headers: { 'cache-control': 'no-store', etag: etagOf(body) } });
  },
});
