// POST /workflows — save a new workflow `{ name, graph }` in the key's billing scope (its workspace
// when bound, else its account). 201 with the workflow, its Location and ETag. A bad save is a 400
// whose `error.details` lists every problem. With an Idempotency-Key, a retry creates nothing new.

import { IDEMPOTENCY_HEADER, IdempotencyKeySchema, REPLAYED_HEADER } from '../../../idempotency.ts';
import { readIdempotencyKey } from '../../idempotency-header.ts';
import { readJson, sendJson } from '../../json.ts';
import { apiUrl, defineRoute } from '../../route.ts';
import { createWorkflowFor, etagOf } from '../../../workflows/authoring.ts';
import { SaveWorkflowRequest, Workflow } from '../../../workflows/schemas.ts';

export default defineRoute<{ body: unknown; key: string | null }>({
  method: 'POST',
  path: '/workflows',
  operationId: 'createWorkflow',
  summary: 'Save a new workflow',
  description:
    'The workflow belongs to the key\'s billing scope: the workspace of a workspace-bound key, else the account. ' +
    'The graph is checked as `kiln workflow import` checks it — unique ids, edges between existing nodes, no cycles, models that exist and fit their output type, ' +
    'image URLs the owner can read, at most 200 nodes, 1,000 edges and 256 KB — and every problem is listed in `error.details` (`{ path, message }`, `path` a JSON pointer into this body, e.g. `/graph/nodes/3/model`). ' +
    'Answers 201 with the workflow (version 1), its `Location` and `ETag`. ' +
    'With an `Idempotency-Key`, a retry (same key, same body, any key of the account in the same scope) answers the same workflow with `idempotent-replayed: true` and creates nothing. ' +
    'Counted on the key\'s read rate limit.',
  tag: 'Workflows',
  scope: 'write',
  bucket: 'read',
  headers: { [IDEMPOTENCY_HEADER]: IdempotencyKeySchema },
  body: SaveWorkflowRequest,
  success: {
    status: 201,
    description: 'Saved (or, replayed, saved earlier with this Idempotency-Key).',
    schema: Workflow,
    headers: {
      location: 'The workflow\'s URL.',
      'cache-control': 'Always `no-store`.',
      etag: 'The version, quoted (`"1"`): send it as `If-Match` to replace or delete only this version.',
      [REPLAYED_HEADER]: '`true` when this is the stored answer of an earlier request with the same Idempotency-Key and body.',
    },
  },
  errors: [400, 401, 403, 413, 415, 422, 429, 503],
  prepare: async (ctx, event) => ({ key: readIdempotencyKey(event), body: await readJson(event, ctx.config.maxBodyBytes) }),
  async handler(ctx, event, { caller, payload }) {
    const saved = await createWorkflowFor(ctx, caller, payload!.body, payload!.key);
    const headers: Record<string, string> = {
      'cache-control': 'no-store', location: apiUrl(ctx, `/workflows/${saved.body.id}`), etag: etagOf(saved.body),
    };
    if (saved.replayed) headers[REPLAYED_HEADER] = 'true';
    return sendJson(event, saved.body, { status: 201, headers });
  },
});
