// DELETE /workflows/{id} — the workflow leaves GET /workflows and can no longer run (404); runs
// already started finish and stay readable by id. Honours If-Match like PUT.

import { getRouterParam } from 'h3';
import { IfMatchHeader, readIfMatch } from '../../conditional.ts';
import { defineRoute } from '../../route.ts';
import { deleteWorkflowFor, workflowId } from '../../../workflows/authoring.ts';
import { WorkflowIdParam } from './_params.ts';

export default defineRoute<{ id: string; ifMatch: number[] | null }>({
  method: 'DELETE',
  path: '/workflows/{id}',
  operationId: 'deleteWorkflow',
  summary: 'Delete a workflow',
  description:
    'It leaves `GET /workflows`, and `GET /workflows/{id}`, runs and retries of it answer 404. Runs already started finish, and they stay readable by id ' +
    '(`GET /workflows/{id}/runs/{runId}`, their events and graph, `GET /workflows/{id}/runs`). With `If-Match`, only when that is still the version (412 otherwise).',
  tag: 'Workflows',
  scope: 'write',
  bucket: 'read',
  params: { id: WorkflowIdParam },
  headers: { 'If-Match': IfMatchHeader },
  success: { status: 204, description: 'Deleted.' },
  errors: [400, 401, 403, 404, 412, 429, 503],
  prepare: (_ctx, event) => ({ id: workflowId(getRouterParam(event, 'id')), ifMatch: readIfMatch(event) }),
  async handler(ctx, event, { caller, payload }) {
    await deleteWorkflowFor(ctx, caller, payload!.id, payload!.ifMatch);
    event.res.status = 204;
    event.res.headers.set('cache-control', 'no-store');
    return '';
  },
});
