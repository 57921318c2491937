// PUT /workflows/{id} — replace a workflow's name and graph (version + 1). With If-Match, only over
// the version named (412 precondition_failed otherwise); without, the last write wins. Runs already
// started keep their snapshot.

import { getRouterParam } from 'h3';
import { IfMatchHeader, readIfMatch } from '../../conditional.ts';
import { readJson, sendJson } from '../../json.ts';
import { defineRoute } from '../../route.ts';
import { etagOf, replaceWorkflowFor, workflowId } from '../../../workflows/authoring.ts';
import { SaveWorkflowRequest, Workflow } from '../../../workflows/schemas.ts';
import { WorkflowIdParam } from './_params.ts';

export default defineRoute<{ id: string; ifMatch: number[] | null; body: unknown }>({
  method: 'PUT',
  path: '/workflows/{id}',
  operationId: 'replaceWorkflow',
  summary: 'Replace a workflow\'s name and graph',
  description:
    'Checked as on create (400 with `error.details`). With `If-Match`, saves only over that version: if the workflow was saved since, 412 `precondition_failed` and nothing is written (read it again, reapply, save). ' +
    'Without it the last write wins. Results written back by runs are kept on output nodes whose `result` the body leaves out (`"result": null` removes one). ' +
    'Runs already started keep their snapshot. Counted on the key\'s read rate limit.',
  tag: 'Workflows',
  scope: 'write',
  bucket: 'read',
  params: { id: WorkflowIdParam },
  headers: { 'If-Match': IfMatchHeader },
  body: SaveWorkflowRequest,
  success: { status: 200, description: 'Saved: the workflow as stored, its new version.', schema: Workflow, headers: { etag: 'The new version, quoted.', 'cache-control': 'Always `no-store`.' } },
  errors: [400, 401, 403, 404, 412, 413, 415, 429, 503],
  prepare: async (ctx, event) => ({
    id: workflowId(getRouterParam(event, 'id')),
    ifMatch: readIfMatch(event),
    body: await readJson(event, ctx.config.maxBodyBytes),
  }),
  async handler(ctx, event, { caller, payload }) {
    const saved = await replaceWorkflowFor(ctx, caller, payload!.id, payload!.body, payload!.ifMatch);
    return sendJson(event, saved, { headers: { 'cache-control': 'no-store', etag: etagOf(saved) } });
  },
});
